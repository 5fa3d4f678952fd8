import { Webhook as StandardWebhook } from 'standardwebhooks';
import { Webhook as SvixWebhook } from 'svix';
import { describe, expect, it, vi } from 'vitest';
import { createProvider } from '../../../services/core/providers/index.ts';
import { identify, NOW_MS, NOW_S, request, reserialised, tampered, verdictOf } from './fixtures.ts';

const SECRET = `whsec_${Buffer.from('a 24-byte key for tests!').toString('base64')}`;
const OLD_SECRET = `whsec_${Buffer.from('the previous key, rotated').toString('base64')}`;
const OTHER_SECRET = `whsec_${Buffer.from('somebody else entirely!!').toString('base64')}`;
const MSG_ID = 'msg_2fVQa3Q8xg6Yk2yTq0sL5w';
const BODY =
  '{"type":"invoice.paid","data":{"id":"inv_1","version":7,"updated":"2024-04-12T10:18:49.621022Z"}}';

const provider = createProvider({ provider: 'standard-webhooks' });

function signed(
  body: string,
  options: { secret?: string; timestampS?: number; prefix?: 'webhook' | 'svix'; id?: string } = {},
): Record<string, string> {
  const prefix = options.prefix ?? 'webhook';
  const id = options.id ?? MSG_ID;
  const timestampS = options.timestampS ?? NOW_S;
  const sdk =
    prefix === 'svix'
      ? new SvixWebhook(options.secret ?? SECRET)
      : new StandardWebhook(options.secret ?? SECRET);
  return {
    [`${prefix}-id`]: id,
    [`${prefix}-timestamp`]: String(timestampS),
    [`${prefix}-signature`]: sdk.sign(id, new Date(timestampS * 1000), body),
  };
}

describe('standard-webhooks verify', () => {
  it('accepts a delivery signed by the standardwebhooks SDK', () => {
    expect(verdictOf(provider, request(BODY, signed(BODY), [SECRET]))).toBe('ok');
  });

  it('accepts the svix-* headers signed by the svix SDK, under both provider names', () => {
    const headers = signed(BODY, { prefix: 'svix' });
    expect(verdictOf(provider, request(BODY, headers, [SECRET]))).toBe('ok');
    expect(verdictOf(createProvider({ provider: 'svix' }), request(BODY, headers, [SECRET]))).toBe('ok');
  });

  it('prefers svix-* when both header sets are present', () => {
    const good = signed(BODY, { prefix: 'svix' });
    const bad = signed(BODY, { secret: OTHER_SECRET });
    expect(verdictOf(provider, request(BODY, { ...bad, ...good }, [SECRET]))).toBe('ok');
    const svixBad = signed(BODY, { prefix: 'svix', secret: OTHER_SECRET });
    expect(verdictOf(provider, request(BODY, { ...signed(BODY), ...svixBad }, [SECRET]))).toBe(
      'signature_invalid',
    );
  });

  it('accepts a key given as bare base64 without the whsec_ prefix', () => {
    const bare = SECRET.slice('whsec_'.length);
    expect(verdictOf(provider, request(BODY, signed(BODY), [bare]))).toBe('ok');
  });

  it('agrees with the SDK verifier on what it accepts', () => {
    // The SDK reads Date.now(), so pin it to the same fixed clock as ours.
    vi.useFakeTimers({ now: NOW_MS });
    try {
      const headers = signed(BODY);
      expect(() => new StandardWebhook(SECRET).verify(BODY, headers)).not.toThrow();
      expect(verdictOf(provider, request(BODY, headers, [SECRET]))).toBe('ok');
      const forged = {
        ...headers,
        'webhook-signature': signed(BODY, { secret: OTHER_SECRET })['webhook-signature'] ?? '',
      };
      expect(() => new StandardWebhook(SECRET).verify(BODY, forged)).toThrow();
      expect(verdictOf(provider, request(BODY, forged, [SECRET]))).toBe('signature_invalid');
    } finally {
      vi.useRealTimers();
    }
  });

  it('refuses a tampered body', () => {
    expect(verdictOf(provider, request(tampered(BODY), signed(BODY), [SECRET]))).toBe('signature_invalid');
  });

  it('refuses the same JSON re-serialised with other whitespace', () => {
    expect(verdictOf(provider, request(reserialised(BODY), signed(BODY), [SECRET]))).toBe(
      'signature_invalid',
    );
  });

  it('refuses a signature made with another secret', () => {
    expect(verdictOf(provider, request(BODY, signed(BODY, { secret: OTHER_SECRET }), [SECRET]))).toBe(
      'signature_invalid',
    );
  });

  it('refuses a changed id, since the id is signed', () => {
    const headers = { ...signed(BODY), 'webhook-id': 'msg_other' };
    expect(verdictOf(provider, request(BODY, headers, [SECRET]))).toBe('signature_invalid');
  });

  it('refuses timestamps past the tolerance in both directions, accepting the edges', () => {
    expect(verdictOf(provider, request(BODY, signed(BODY, { timestampS: NOW_S - 300 }), [SECRET]))).toBe(
      'ok',
    );
    expect(verdictOf(provider, request(BODY, signed(BODY, { timestampS: NOW_S + 300 }), [SECRET]))).toBe(
      'ok',
    );
    expect(verdictOf(provider, request(BODY, signed(BODY, { timestampS: NOW_S - 301 }), [SECRET]))).toBe(
      'timestamp_out_of_tolerance',
    );
    expect(verdictOf(provider, request(BODY, signed(BODY, { timestampS: NOW_S + 301 }), [SECRET]))).toBe(
      'timestamp_out_of_tolerance',
    );
  });

  it('reports each missing header with its own code', () => {
    const headers = signed(BODY);
    const without = (name: string) => Object.fromEntries(Object.entries(headers).filter(([k]) => k !== name));
    expect(verdictOf(provider, request(BODY, without('webhook-signature'), [SECRET]))).toBe(
      'signature_missing',
    );
    expect(verdictOf(provider, request(BODY, without('webhook-timestamp'), [SECRET]))).toBe(
      'timestamp_missing',
    );
    // Verification comes first: without an id the signature cannot match, so it is a 401.
    expect(verdictOf(provider, request(BODY, without('webhook-id'), [SECRET]))).toBe('signature_invalid');
  });

  it('answers a forgery without an id as signature_invalid, and an authentic one as event_id_missing', () => {
    const forged = signed(BODY, { secret: OTHER_SECRET });
    delete forged['webhook-id'];
    expect(verdictOf(provider, request(BODY, forged, [SECRET]))).toBe('signature_invalid');
    // Signed over an empty id by the SDK: authentic, so the id's absence is what is wrong.
    const emptyId = signed(BODY, { id: '' });
    delete emptyId['webhook-id'];
    expect(verdictOf(provider, request(BODY, emptyId, [SECRET]))).toBe('ok');
    expect(identify(provider, request(BODY, emptyId, [SECRET]))).toMatchObject({
      ok: false,
      code: 'event_id_missing',
    });
  });

  it('verifies when two webhook-signature headers arrive joined by ", " and either is valid', () => {
    const good = signed(BODY)['webhook-signature'];
    const stale = signed(BODY, { secret: OTHER_SECRET })['webhook-signature'];
    for (const joined of [`${good}, ${stale}`, `${stale}, ${good}`]) {
      const headers = { ...signed(BODY), 'webhook-signature': joined };
      expect(verdictOf(provider, request(BODY, headers, [SECRET]))).toBe('ok');
    }
    const bothStale = { ...signed(BODY), 'webhook-signature': `${stale}, ${stale}` };
    expect(verdictOf(provider, request(BODY, bothStale, [SECRET]))).toBe('signature_invalid');
  });

  it('refuses malformed headers', () => {
    const headers = signed(BODY);
    expect(verdictOf(provider, request(BODY, { ...headers, 'webhook-timestamp': '1.7e9' }, [SECRET]))).toBe(
      'timestamp_invalid',
    );
    expect(
      verdictOf(provider, request(BODY, { ...headers, 'webhook-signature': 'v1,not*base64' }, [SECRET])),
    ).toBe('signature_invalid');
    const onlyOtherVersions = `v1a,${(headers['webhook-signature'] ?? '').slice(3)}`;
    expect(
      verdictOf(provider, request(BODY, { ...headers, 'webhook-signature': onlyOtherVersions }, [SECRET])),
    ).toBe('signature_invalid');
  });

  it('accepts a delivery signed with a previous secret among several configured', () => {
    const headers = signed(BODY, { secret: OLD_SECRET });
    expect(verdictOf(provider, request(BODY, headers, [SECRET, OLD_SECRET]))).toBe('ok');
    expect(verdictOf(provider, request(BODY, headers, [SECRET]))).toBe('signature_invalid');
  });

  it('accepts a list with one stale and one good v1 entry, ignoring other versions', () => {
    const stale = signed(BODY, { secret: OTHER_SECRET })['webhook-signature'];
    const good = signed(BODY)['webhook-signature'];
    const list = `v1a,c29tZXRoaW5n ${stale} ${good}`;
    expect(verdictOf(provider, request(BODY, { ...signed(BODY), 'webhook-signature': list }, [SECRET]))).toBe(
      'ok',
    );
  });

  it('skips a configured secret that is not base64 without telling the unauthenticated caller', () => {
    const verdict = provider.verify(request(BODY, signed(BODY), ['whsec_!!!']));
    expect(verdict).toMatchObject({ ok: false, code: 'signature_invalid' });
    if (!verdict.ok) expect(verdict.message).not.toMatch(/base64|secret is/);
    expect(verdictOf(provider, request(BODY, signed(BODY), ['whsec_!!!', SECRET]))).toBe('ok');
  });

  it('never puts a secret or the signature in its messages', () => {
    const headers = signed(BODY, { secret: OTHER_SECRET });
    const verdict = provider.verify(request(BODY, headers, [SECRET]));
    expect(verdict.ok).toBe(false);
    if (!verdict.ok) {
      expect(verdict.message).not.toContain(SECRET.slice(6));
      expect(verdict.message).not.toContain((headers['webhook-signature'] ?? '').slice(3));
    }
  });
});

describe('standard-webhooks identify', () => {
  it('takes the id from webhook-id and the type from the body, and stores no header', () => {
    expect(identify(provider, request(BODY, signed(BODY), [SECRET]))).toEqual({
      ok: true,
      event: {
        eventId: MSG_ID,
        eventType: 'invoice.paid',
        entityType: null,
        entityId: null,
        entityVersion: null,
        headers: {},
        idUnsigned: false,
      },
    });
  });

  it('takes the id from svix-id when Svix sent the delivery', () => {
    const result = identify(
      provider,
      request(BODY, signed(BODY, { prefix: 'svix', id: 'msg_svix' }), [SECRET]),
    );
    expect(result).toMatchObject({ ok: true, event: { eventId: 'msg_svix' } });
  });

  it('refuses a body without a type', () => {
    const body = '{"data":{}}';
    expect(identify(provider, request(body, signed(body), [SECRET]))).toMatchObject({
      ok: false,
      code: 'event_type_missing',
    });
  });

  it('reads entity and version only through overrides', () => {
    const withOverrides = createProvider({
      provider: 'standard-webhooks',
      extract: { entityType: '/type', entityId: '/data/id', version: '/data/version' },
    });
    expect(identify(withOverrides, request(BODY, signed(BODY), [SECRET]))).toMatchObject({
      ok: true,
      event: { entityType: 'invoice.paid', entityId: 'inv_1', entityVersion: '7' },
    });
  });

  it('normalises an RFC 3339 version to exact microseconds', () => {
    const withOverrides = createProvider({
      provider: 'standard-webhooks',
      extract: { entityType: '/type', entityId: '/data/id', version: '/data/updated' },
    });
    expect(identify(withOverrides, request(BODY, signed(BODY), [SECRET]))).toMatchObject({
      ok: true,
      event: { entityVersion: '1712917129621022' },
    });
  });

  it('lets an override replace the id and type', () => {
    const withOverrides = createProvider({
      provider: 'standard-webhooks',
      extract: { eventId: '/data/id', eventType: '/data/kind' },
    });
    const result = identify(withOverrides, request(BODY, signed(BODY), [SECRET]));
    // The override replaces the default outright; it does not fall back to /type.
    expect(result).toMatchObject({ ok: false, code: 'event_type_missing' });
    if (!result.ok) expect(result.message).toContain('/data/kind');
  });
});

describe('fixed clock', () => {
  it('uses nowMs rather than the process clock', () => {
    const headers = signed(BODY, { timestampS: NOW_S });
    expect(verdictOf(provider, request(BODY, headers, [SECRET], NOW_MS + 10_000_000))).toBe(
      'timestamp_out_of_tolerance',
    );
  });
});
