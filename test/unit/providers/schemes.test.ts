import { createHmac, generateKeyPairSync, sign } from 'node:crypto';
import { Paddle } from '@paddle/paddle-node-sdk';
import { isValidSlackRequest } from '@slack/bolt';
import { describe, expect, it } from 'vitest';
import { createProvider, type ProviderSpec } from '../../../services/core/providers/index.ts';
import {
  parseTemplate,
  type SchemeOptions,
  schemeOptionsSchema,
} from '../../../services/core/providers/scheme-options.ts';
import { NOW_MS, NOW_S } from './fixtures.ts';
import { atTestClock, verifyRequest } from './preset-proof.ts';

const verdict = (
  spec: ProviderSpec,
  body: string,
  headers: Record<string, string>,
  secrets: string[],
  nowMs = NOW_MS,
) => {
  const result = createProvider(spec).verify(verifyRequest(body, headers, secrets, nowMs));
  return result.ok ? 'ok' : result.code;
};

describe('Standard Webhooks v1a (Ed25519), computed from the specification', () => {
  // https://github.com/standard-webhooks/standard-webhooks/blob/main/spec/standard-webhooks.md#signature-scheme
  const { publicKey, privateKey } = generateKeyPairSync('ed25519');
  const whpk = `whpk_${publicKey.export({ type: 'spki', format: 'der' }).subarray(12).toString('base64')}`;
  const body = '{"type":"invoice.paid","data":{"id":"inv_1"}}';
  const headers = (t: number, key = privateKey) => ({
    'webhook-id': 'msg_1',
    'webhook-timestamp': String(t),
    'webhook-signature': `v1a,${sign(null, Buffer.from(`msg_1.${t}.${body}`), key).toString('base64')}`,
  });

  it('verifies a v1a signature with the configured whpk_ public key, beside HMAC secrets', () => {
    const hmacSecret = `whsec_${Buffer.from('an hmac key for v1 here!').toString('base64')}`;
    expect(verdict({ provider: 'standard-webhooks' }, body, headers(NOW_S), [hmacSecret, whpk])).toBe('ok');
  });

  it('refuses another key, a tampered body, and a v1a signature checked against an HMAC secret', () => {
    const other = generateKeyPairSync('ed25519').privateKey;
    expect(verdict({ provider: 'standard-webhooks' }, body, headers(NOW_S, other), [whpk])).toBe(
      'signature_invalid',
    );
    expect(verdict({ provider: 'standard-webhooks' }, `${body} `, headers(NOW_S), [whpk])).toBe(
      'signature_invalid',
    );
    const hmacSecret = `whsec_${Buffer.from('an hmac key for v1 here!').toString('base64')}`;
    expect(verdict({ provider: 'standard-webhooks' }, body, headers(NOW_S), [hmacSecret])).toBe(
      'signature_invalid',
    );
  });

  it('checks the timestamp both ways', () => {
    expect(verdict({ provider: 'standard-webhooks' }, body, headers(NOW_S - 301), [whpk])).toBe(
      'timestamp_out_of_tolerance',
    );
    expect(verdict({ provider: 'standard-webhooks' }, body, headers(NOW_S + 301), [whpk])).toBe(
      'timestamp_out_of_tolerance',
    );
  });
});

describe("Standard Webhooks v1: Svix's published example", () => {
  it('verifies (https://docs.svix.com/receiving/verifying-payloads/how-manual)', () => {
    const headers = {
      'svix-id': 'msg_p5jXN8AQM9LWM0D4loKWxJek',
      'svix-timestamp': '1614265330',
      'svix-signature': 'v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=',
    };
    const at = 1_614_265_330_000;
    expect(
      verdict(
        { provider: 'svix' },
        '{"test": 2432232314}',
        headers,
        ['whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw'],
        at,
      ),
    ).toBe('ok');
  });
});

describe("slack: Bolt's verifier and Slack's published example agree with hookgate", () => {
  const secret = '8f742231b10e8888abcd99yyyzzz85a5';
  // https://api.slack.com/authentication/verifying-requests-from-slack (the walkthrough's values)
  const example =
    'token=xyzz0WbapA4vBCDEFasx0q6G&team_id=T1DC2JH3J&team_domain=testteamnow&channel_id=G8PSS9T3V&channel_name=foobar&user_id=U2CERLKJA&user_name=roadrunner&command=%2Fwebhook-collect&text=&response_url=https%3A%2F%2Fhooks.slack.com%2Fcommands%2FT1DC2JH3J%2F397700885554%2F96rGlfmibIGlgcZRskXaIFfN&trigger_id=398738663015.47445629121.803a0bc887a14d10d2c447fce8b6703c';
  const signature = 'v0=a2114d57b48eac39b9ad189dd8316235a7b4a8d21a10bd27519666489c69b503';

  it("verifies Slack's example", () => {
    const headers = { 'x-slack-request-timestamp': '1531420618', 'x-slack-signature': signature };
    expect(verdict({ provider: 'slack' }, example, headers, [secret], 1_531_420_618_000)).toBe('ok');
  });

  it('accepts and refuses what Bolt accepts and refuses, the edge of the window included', () => {
    const body = '{"type":"event_callback","event_id":"Ev1","event":{"type":"app_mention"}}';
    for (const [t, now] of [
      [NOW_S, NOW_MS],
      [NOW_S - 300, NOW_MS + 999],
      [NOW_S - 301, NOW_MS],
    ] as const) {
      const headers = {
        'x-slack-request-timestamp': String(t),
        'x-slack-signature': `v0=${createHmac('sha256', secret).update(`v0:${t}:${body}`).digest('hex')}`,
      };
      const bolt = isValidSlackRequest({
        signingSecret: secret,
        body,
        headers: { 'x-slack-signature': headers['x-slack-signature'], 'x-slack-request-timestamp': t },
        nowMilliseconds: now,
      });
      expect(verdict({ provider: 'slack' }, body, headers, [secret], now) === 'ok').toBe(bolt);
    }
  });
});

describe("paddle: the Paddle SDK's verifier agrees with hookgate", () => {
  const secret = 'pdl_ntfset_01hv_test_secret';
  const body = '{"event_id":"evt_1","event_type":"subscription.updated","data":{"id":"sub_1"}}';

  it('accepts what the SDK accepts, refuses a tampered copy as it does', async () => {
    const paddle = new Paddle('pdl_sdbx_apikey_01hv_test');
    const header = `ts=${NOW_S};h1=${createHmac('sha256', secret).update(`${NOW_S}:${body}`).digest('hex')}`;
    const sdk = await atTestClock(() => paddle.webhooks.isSignatureValid(body, secret, header));
    expect(sdk).toBe(true);
    expect(verdict({ provider: 'paddle' }, body, { 'paddle-signature': header }, [secret])).toBe('ok');
    const tampered = `${body} `;
    expect(await atTestClock(() => paddle.webhooks.isSignatureValid(tampered, secret, header))).toBe(false);
    expect(verdict({ provider: 'paddle' }, tampered, { 'paddle-signature': header }, [secret])).toBe(
      'signature_invalid',
    );
  });
});

describe('the scheme provider', () => {
  const options = (extra: Partial<SchemeOptions> & Record<string, unknown>) =>
    schemeOptionsSchema.parse({
      algorithm: 'hmac-sha256',
      header: 'X-Signature',
      content: '{body}',
      id: 'digest',
      ...extra,
    });

  it('parses templates, with {{ }} as literal braces and headers by name', () => {
    expect(parseTemplate('{timestamp}.{body}')).toEqual([
      { part: 'timestamp' },
      { literal: '.' },
      { part: 'body' },
    ]);
    expect(parseTemplate('{{x}}{header:X-Id}{body}')).toEqual([
      { literal: '{x}' },
      { header: 'x-id' },
      { part: 'body' },
    ]);
    expect(() => parseTemplate('{nope}{body}')).toThrow(/names \{nope\}/);
    expect(() => parseTemplate('{body')).toThrow(/never closed/);
  });

  it('verifies a Stripe-shaped list with a timestamp entry, any of several signatures', () => {
    const scheme = options({
      header: 'X-Sig',
      list: { separator: ',', assign: '=', versions: ['v1'], timestamp: 't' },
      content: '{timestamp}.{body}',
      timestamp: { list: true, unit: 'seconds' },
    });
    const body = '{"id":"e1"}';
    const mac = (secret: string) => createHmac('sha256', secret).update(`${NOW_S}.${body}`).digest('hex');
    const header = `t=${NOW_S},v1=${mac('old')},v1=${mac('new')}`;
    expect(verdict({ provider: 'scheme', scheme }, body, { 'x-sig': header }, ['new'])).toBe('ok');
    // A space after the separator names an entry " v1", which is ignored, as Stripe's library does.
    expect(
      verdict({ provider: 'scheme', scheme }, body, { 'x-sig': `t=${NOW_S}, v1=${mac('new')}` }, ['new']),
    ).toBe('signature_invalid');
    expect(
      verdict({ provider: 'scheme', scheme }, body, { 'x-sig': `t=${NOW_S},t=${NOW_S},v1=${mac('new')}` }, [
        'new',
      ]),
    ).toBe('timestamp_invalid');
  });

  it('verifies base64url HMAC-SHA512 with a hex secret and a signed header', () => {
    const scheme = options({
      algorithm: 'hmac-sha512',
      encoding: 'base64url',
      secretFormat: 'hex',
      content: '{header:X-Tenant}:{body}',
    });
    const body = '{"id":"e1"}';
    const signature = createHmac('sha512', Buffer.from('00ff10', 'hex'))
      .update(`acme:${body}`)
      .digest('base64url');
    expect(
      verdict({ provider: 'scheme', scheme }, body, { 'x-signature': signature, 'x-tenant': 'acme' }, [
        '00ff10',
      ]),
    ).toBe('ok');
    expect(
      verdict({ provider: 'scheme', scheme }, body, { 'x-signature': signature, 'x-tenant': 'evil' }, [
        '00ff10',
      ]),
    ).toBe('signature_invalid');
  });

  it('verifies RSA-SHA256 (PKCS#1 v1.5) with a PEM public key, several at once', () => {
    const good = generateKeyPairSync('rsa', { modulusLength: 2048 });
    const other = generateKeyPairSync('rsa', { modulusLength: 2048 });
    const pem = (key: typeof good.publicKey) => key.export({ type: 'spki', format: 'pem' }).toString();
    const scheme = options({
      algorithm: 'rsa-sha256',
      encoding: 'base64',
      content: '{id}.{body}',
      id: { header: 'X-Id' },
    });
    const body = '{"n":1}';
    const headers = {
      'x-id': 'abc',
      'x-signature': sign('sha256', Buffer.from(`abc.${body}`), good.privateKey).toString('base64'),
    };
    expect(
      verdict({ provider: 'scheme', scheme }, body, headers, [pem(other.publicKey), pem(good.publicKey)]),
    ).toBe('ok');
    expect(verdict({ provider: 'scheme', scheme }, body, headers, [pem(other.publicKey)])).toBe(
      'signature_invalid',
    );
    // The id is signed: another id under the same signature fails.
    expect(
      verdict({ provider: 'scheme', scheme }, body, { ...headers, 'x-id': 'abd' }, [pem(good.publicKey)]),
    ).toBe('signature_invalid');
    const identity = createProvider({ provider: 'scheme', scheme }).identify({
      headers: { 'x-id': 'abc' },
      body: {},
    });
    expect(identity).toMatchObject({
      ok: true,
      event: { eventId: 'abc', eventType: 'unknown', idUnsigned: false },
    });
  });

  it('takes a timestamp from the verified body, in milliseconds', () => {
    const scheme = options({ timestamp: { pointer: '/sentAt', unit: 'milliseconds' } });
    const body = (ms: number) => `{"sentAt":${ms}}`;
    const headers = (text: string) => ({
      'x-signature': createHmac('sha256', 's').update(text).digest('hex'),
    });
    expect(
      verdict({ provider: 'scheme', scheme }, body(NOW_MS - 300_000), headers(body(NOW_MS - 300_000)), ['s']),
    ).toBe('ok');
    expect(
      verdict({ provider: 'scheme', scheme }, body(NOW_MS - 300_001), headers(body(NOW_MS - 300_001)), ['s']),
    ).toBe('timestamp_out_of_tolerance');
  });

  it('refuses schemes that would authenticate nothing or could never verify, naming the key', () => {
    const issues = (extra: Record<string, unknown>) =>
      schemeOptionsSchema
        .safeParse({
          algorithm: 'hmac-sha256',
          header: 'X-Signature',
          content: '{body}',
          id: 'digest',
          ...extra,
        })
        .error?.issues.map((issue) => `${issue.path.join('.')}: ${issue.message}`) ?? [];
    expect(issues({ content: '{timestamp}' })).toContain('content: must sign the body: include {body}');
    expect(issues({ content: '{timestamp}.{body}' })).toContain(
      'timestamp: is required when content signs {timestamp}',
    );
    expect(issues({ timestamp: { header: 'X-Ts', unit: 'seconds' } })).toContain(
      'content: must include {timestamp}: an unsigned timestamp proves nothing',
    );
    expect(issues({ content: '{id}.{body}', id: { pointer: '/id' } })).toContain(
      'id: must be a header when content signs {id}',
    );
    expect(issues({ content: '{whatever}{body}' })[0]).toMatch(/^content: names \{whatever\}/);
    expect(issues({ algorithm: 'token', encoding: 'text' })).toContain(
      'content: is not used by algorithm token: nothing is signed',
    );
    expect(issues({ headers: ['A'] })).toContain('header: set header (or headers for several), not both');
  });
});
