import { createHmac, generateKeyPairSync, sign } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { createProvider } from '../../../services/core/providers/index.ts';
import type { Provider } from '../../../services/core/providers/types.ts';
import { NOW_S } from './fixtures.ts';
import { verifyRequest } from './preset-proof.ts';

// Each provider's question is answered as that provider documents it, only after the
// request verified where the provider signs it; none becomes an event.

const SECRET = 'the-secret-they-gave-us';

/** Verify, then identify, as the gateway does; the question's answer or the event. */
function ask(provider: Provider, body: string, headers: Record<string, string>, secrets = [SECRET]) {
  const request = verifyRequest(body, headers, secrets);
  const verdict = provider.verify(request);
  if (!verdict.ok) return verdict;
  return provider.identify({
    headers: request.headers,
    body: JSON.parse(body),
    rawBody: request.rawBody,
    secrets,
  });
}

describe('zoom endpoint.url_validation', () => {
  const provider = createProvider({ provider: 'zoom' });
  const body = JSON.stringify({
    payload: { plainToken: 'qgg8vlvZRS6UYooatFL8Aw' },
    event_ts: 1_654_503_849_680,
    event: 'endpoint.url_validation',
  });
  const signed = (secret: string) => ({
    'x-zm-request-timestamp': String(NOW_S),
    'x-zm-signature': `v0=${createHmac('sha256', secret).update(`v0:${NOW_S}:${body}`).digest('hex')}`,
  });

  it('answers the plain token and its HMAC under the secret that signed the request', () => {
    // During a rotation the second secret is the one Zoom holds: the answer must use it.
    expect(ask(provider, body, signed(SECRET), ['an-older-secret', SECRET])).toEqual({
      ok: true,
      reply: {
        status: 200,
        body: {
          plainToken: 'qgg8vlvZRS6UYooatFL8Aw',
          encryptedToken: createHmac('sha256', SECRET).update('qgg8vlvZRS6UYooatFL8Aw').digest('hex'),
        },
        kind: 'url_validation',
      },
    });
  });

  it('refuses an unsigned validation request (no answer to compute a token for a stranger)', () => {
    expect(ask(provider, body, signed('not-our-secret'))).toMatchObject({
      ok: false,
      code: 'signature_invalid',
    });
  });
});

describe('discord PING', () => {
  const { publicKey, privateKey } = generateKeyPairSync('ed25519');
  const key = publicKey.export({ type: 'spki', format: 'der' }).subarray(12).toString('hex');
  const provider = createProvider({ provider: 'discord' });
  const signed = (body: string) => ({
    'x-signature-timestamp': String(NOW_S),
    'x-signature-ed25519': sign(null, Buffer.from(`${NOW_S}${body}`), privateKey).toString('hex'),
  });

  it('answers the webhook-events PING (type 0) with an empty 204', () => {
    const body = JSON.stringify({ version: 1, application_id: '1', type: 0 });
    expect(ask(provider, body, signed(body), [key])).toEqual({
      ok: true,
      reply: { status: 204, kind: 'ping' },
    });
  });

  it('answers an interactions PING (type 1 without an event) with a PONG', () => {
    const body = JSON.stringify({ id: '9', application_id: '1', type: 1, token: 't', version: 1 });
    expect(ask(provider, body, signed(body), [key])).toEqual({
      ok: true,
      reply: { status: 200, body: { type: 1 }, kind: 'interaction_ping' },
    });
  });

  it('refuses a PING with a bad signature with 401, as Discord checks', () => {
    const body = JSON.stringify({ version: 1, application_id: '1', type: 0 });
    const headers = { ...signed(body), 'x-signature-ed25519': '00'.repeat(64) };
    expect(ask(provider, body, headers, [key])).toMatchObject({ ok: false, code: 'signature_invalid' });
  });
});

describe('twitch webhook_callback_verification', () => {
  const provider = createProvider({ provider: 'twitch' });
  const body = JSON.stringify({
    challenge: 'pogchamp-kappa-360noscope-vohiyo',
    subscription: {
      id: 's1',
      type: 'channel.follow',
      version: '2',
      status: 'webhook_callback_verification_pending',
    },
  });
  const timestamp = new Date(NOW_S * 1000).toISOString();
  const headers = {
    'Twitch-Eventsub-Message-Id': 'm1',
    'Twitch-Eventsub-Message-Timestamp': timestamp,
    'Twitch-Eventsub-Message-Type': 'webhook_callback_verification',
    'Twitch-Eventsub-Message-Signature': `sha256=${createHmac('sha256', SECRET).update(`m1${timestamp}${body}`).digest('hex')}`,
  };

  it('echoes the challenge as text/plain', () => {
    expect(ask(provider, body, headers)).toEqual({
      ok: true,
      reply: { status: 200, text: 'pogchamp-kappa-360noscope-vohiyo', kind: 'webhook_callback_verification' },
    });
  });

  it('types a revocation by its body, not by the unsigned message-type header', () => {
    const revocation = JSON.stringify({
      subscription: { id: 's1', type: 'channel.follow', status: 'authorization_revoked' },
    });
    const signed = {
      ...headers,
      'Twitch-Eventsub-Message-Type': 'notification',
      'Twitch-Eventsub-Message-Signature': `sha256=${createHmac('sha256', SECRET).update(`m1${timestamp}${revocation}`).digest('hex')}`,
    };
    expect(ask(provider, revocation, signed)).toMatchObject({
      ok: true,
      event: { eventType: 'revocation.channel.follow' },
    });
  });
});

describe("xero's intent to receive and asana's heartbeat", () => {
  it('xero: a signed empty batch is answered 200 and stored as nothing; a wrongly signed one is 401', () => {
    const provider = createProvider({ provider: 'xero' });
    const body = JSON.stringify({
      events: [],
      firstEventSequence: 0,
      lastEventSequence: 0,
      entropy: 'FMLHZNKCVK',
    });
    const good = { 'x-xero-signature': createHmac('sha256', SECRET).update(body).digest('base64') };
    expect(ask(provider, body, good)).toEqual({
      ok: true,
      reply: { status: 200, kind: 'intent_to_receive' },
    });
    const bad = { 'x-xero-signature': createHmac('sha256', 'wrong').update(body).digest('base64') };
    expect(ask(provider, body, bad)).toMatchObject({ ok: false, code: 'signature_invalid' });
  });

  it('asana: a signed heartbeat ({"events":[]}) is answered 200 and stored as nothing', () => {
    const provider = createProvider({ provider: 'asana' });
    const body = '{"events":[]}';
    const headers = { 'x-hook-signature': createHmac('sha256', SECRET).update(body).digest('hex') };
    expect(ask(provider, body, headers)).toEqual({ ok: true, reply: { status: 200, kind: 'heartbeat' } });
  });
});

describe('unsigned handshakes: they reflect only what the request carried', () => {
  it("asana: X-Hook-Secret is echoed in the answer's header; the log gets its fingerprint only", () => {
    const provider = createProvider({ provider: 'asana' });
    const answer = provider.handshake?.({
      method: 'POST',
      headers: { 'x-hook-secret': 'b537207f20cbfa02' },
      query: '',
    });
    expect(answer).toMatchObject({
      status: 200,
      headers: { 'X-Hook-Secret': 'b537207f20cbfa02' },
      kind: 'asana_handshake',
    });
    expect(JSON.stringify(answer?.log)).not.toContain('b537207f20cbfa02');
    // A signed delivery that happens to carry the header is a delivery, verified as usual.
    expect(
      provider.handshake?.({
        method: 'POST',
        headers: { 'x-hook-secret': 's', 'x-hook-signature': 'ab' },
        query: '',
      }),
    ).toBeNull();
  });

  it('asana: with handshake.revealSecret the secret goes to the log line, so it can be configured', () => {
    const provider = createProvider({ provider: 'asana', handshake: { revealSecret: true } });
    const answer = provider.handshake?.({
      method: 'POST',
      headers: { 'x-hook-secret': 'b537207f20cbfa02' },
      query: '',
    });
    expect(answer?.log).toMatchObject({ handshake_secret: 'b537207f20cbfa02' });
  });

  it('dropbox: GET ?challenge= is echoed as nosniff text; anything else is not a handshake', () => {
    const provider = createProvider({ provider: 'dropbox' });
    expect(provider.handshakeMethods).toEqual(['GET']);
    expect(provider.handshake?.({ method: 'GET', headers: {}, query: 'challenge=abc123XYZ' })).toEqual({
      status: 200,
      text: 'abc123XYZ',
      headers: { 'X-Content-Type-Options': 'nosniff' },
      kind: 'challenge',
    });
    expect(provider.handshake?.({ method: 'GET', headers: {}, query: '' })).toBeNull();
    expect(
      provider.handshake?.({ method: 'GET', headers: {}, query: `challenge=${'x'.repeat(600)}` }),
    ).toBeNull();
    expect(provider.handshake?.({ method: 'POST', headers: {}, query: 'challenge=abc' })).toBeNull();
  });

  it('okta: GET with X-Okta-Verification-Challenge gets {"verification": …}', () => {
    const provider = createProvider({ provider: 'okta' });
    expect(
      provider.handshake?.({
        method: 'GET',
        headers: { 'x-okta-verification-challenge': 'zMNo0w' },
        query: '',
      }),
    ).toEqual({ status: 200, body: { verification: 'zMNo0w' }, kind: 'verification' });
    expect(provider.handshake?.({ method: 'GET', headers: {}, query: '' })).toBeNull();
  });

  it('providers without handshakes answer none', () => {
    expect(createProvider({ provider: 'stripe' }).handshake).toBeUndefined();
    expect(createProvider({ provider: 'bitbucket' }).handshake).toBeUndefined();
  });
});
