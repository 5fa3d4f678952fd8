import { createHmac } from 'node:crypto';
import { sign, verify } from '@octokit/webhooks-methods';
import { describe, expect, it } from 'vitest';
import { createProvider } from '../../../services/core/providers/index.ts';
import { identify, request, reserialised, tampered, verdictOf } from './fixtures.ts';

const SECRET = 'gh-secret-current';
const OLD_SECRET = 'gh-secret-previous';
const BODY = JSON.stringify({ action: 'opened', issue: { id: 1, number: 7 }, repository: { id: 42 } });
const DELIVERY = '72d3162e-cc78-11e3-81ab-4c9367dc0958';

const provider = createProvider({ provider: 'github' });

async function headers(body: string, secret = SECRET, event = 'issues'): Promise<Record<string, string>> {
  return {
    'X-Hub-Signature-256': await sign(secret, body),
    'X-GitHub-Delivery': DELIVERY,
    'X-GitHub-Event': event,
    'X-GitHub-Hook-ID': '292430182',
    'X-GitHub-Hook-Installation-Target-Type': 'repository',
  };
}

describe('github verify', () => {
  it("accepts GitHub's documented test vector", () => {
    const req = request(
      'Hello, World!',
      { 'X-Hub-Signature-256': 'sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17' },
      ["It's a Secret to Everybody"],
    );
    expect(verdictOf(provider, req)).toBe('ok');
  });

  it('accepts a signature from @octokit/webhooks-methods, as does its verifier', async () => {
    const h = await headers(BODY);
    expect(verdictOf(provider, request(BODY, h, [SECRET]))).toBe('ok');
    expect(await verify(SECRET, BODY, h['X-Hub-Signature-256'] ?? '')).toBe(true);
  });

  it('refuses a tampered body', async () => {
    expect(verdictOf(provider, request(tampered(BODY), await headers(BODY), [SECRET]))).toBe(
      'signature_invalid',
    );
  });

  it('refuses the same JSON re-serialised with other whitespace', async () => {
    expect(verdictOf(provider, request(reserialised(BODY), await headers(BODY), [SECRET]))).toBe(
      'signature_invalid',
    );
  });

  it('refuses a signature made with another secret', async () => {
    expect(verdictOf(provider, request(BODY, await headers(BODY, 'nope'), [SECRET]))).toBe(
      'signature_invalid',
    );
  });

  it('reports a missing signature header', () => {
    expect(verdictOf(provider, request(BODY, { 'X-GitHub-Delivery': DELIVERY }, [SECRET]))).toBe(
      'signature_missing',
    );
  });

  it('refuses malformed headers, including the SHA-1 form', async () => {
    const hex = (await sign(SECRET, BODY)).slice('sha256='.length);
    const sha1 = createHmac('sha1', SECRET).update(BODY).digest('hex');
    for (const value of [hex, `sha1=${sha1}`, `sha256=${hex}zz`, `sha256=${hex.slice(2)}`, `SHA256=${hex}`]) {
      expect(verdictOf(provider, request(BODY, { 'X-Hub-Signature-256': value }, [SECRET]))).toBe(
        'signature_invalid',
      );
    }
  });

  it('accepts a delivery signed with a previous secret among several configured', async () => {
    expect(verdictOf(provider, request(BODY, await headers(BODY, OLD_SECRET), [SECRET, OLD_SECRET]))).toBe(
      'ok',
    );
    expect(verdictOf(provider, request(BODY, await headers(BODY, OLD_SECRET), [SECRET]))).toBe(
      'signature_invalid',
    );
  });
});

describe('github identify', () => {
  it('takes the delivery id, joins event and action, and keeps only the allowed headers', async () => {
    expect(identify(provider, request(BODY, await headers(BODY), [SECRET]))).toEqual({
      ok: true,
      event: {
        eventId: DELIVERY,
        eventType: 'issues.opened',
        entityType: 'issue',
        entityId: '1',
        entityVersion: null,
        headers: { 'x-github-event': 'issues', 'x-github-hook-id': '292430182' },
        idUnsigned: true,
      },
    });
  });

  it('keys the pull request, else the issue, else the repository, versioned by its updated_at', async () => {
    const keyed = async (body: object) => {
      const text = JSON.stringify(body);
      const result = identify(provider, request(text, await headers(text), [SECRET]));
      return result.ok && 'event' in result
        ? [result.event.entityType, result.event.entityId, result.event.entityVersion]
        : result;
    };
    const at = '2024-04-12T10:18:49Z';
    const micros = '1712917129000000';
    const repository = { id: 42, updated_at: at };
    expect(await keyed({ action: 'opened', pull_request: { id: 9, updated_at: at }, repository })).toEqual([
      'pull_request',
      '9',
      micros,
    ]);
    expect(
      await keyed({ action: 'created', issue: { id: 7, updated_at: at }, comment: { id: 1 }, repository }),
    ).toEqual(['issue', '7', micros]);
    expect(await keyed({ action: 'renamed', repository })).toEqual(['repository', '42', micros]);
    expect(await keyed({ zen: 'Keep it logically awesome.' })).toEqual([null, null, null]);
  });

  it('uses the event header alone when the body has no action', async () => {
    const body = JSON.stringify({ ref: 'refs/heads/main' });
    expect(identify(provider, request(body, await headers(body, SECRET, 'push'), [SECRET]))).toMatchObject({
      ok: true,
      event: { eventType: 'push' },
    });
  });

  it('never keeps the signature header', async () => {
    const result = identify(provider, request(BODY, await headers(BODY), [SECRET]));
    expect(result.ok && 'event' in result && Object.keys(result.event.headers)).not.toContain(
      'x-hub-signature-256',
    );
  });

  it('refuses a delivery without the delivery id or event header', async () => {
    const h = await headers(BODY);
    const { 'X-GitHub-Delivery': _id, ...noId } = h;
    const { 'X-GitHub-Event': _event, ...noEvent } = h;
    expect(identify(provider, request(BODY, noId, [SECRET]))).toMatchObject({ code: 'event_id_missing' });
    expect(identify(provider, request(BODY, noEvent, [SECRET]))).toMatchObject({
      code: 'event_type_missing',
    });
  });

  it('applies entity overrides', async () => {
    const withOverrides = createProvider({
      provider: 'github',
      extract: { entityType: '/issue/number', entityId: '/issue/id' },
    });
    expect(identify(withOverrides, request(BODY, await headers(BODY), [SECRET]))).toMatchObject({
      ok: true,
      event: { entityType: '7', entityId: '1', entityVersion: null },
    });
  });
});
