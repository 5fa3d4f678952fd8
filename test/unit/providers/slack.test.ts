import { createHmac } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { createProvider } from '../../../services/core/providers/index.ts';
import { identify, NOW_S, request, reserialised, tampered, verdictOf } from './fixtures.ts';

const SECRET = '8f742231b10e8888abcd99yyyzzz85a5';
const OLD_SECRET = 'previous-signing-secret';
const BODY = JSON.stringify({
  token: 'z26uFbvR1xHJEdHE1OQiO6t8',
  team_id: 'T061EG9RZ',
  type: 'event_callback',
  event: { type: 'app_mention', user: 'U061F7AUR', text: 'hi', ts: '1515449522.000016' },
  event_id: 'Ev9UQ52YNA',
  event_time: 1515449522,
});

const provider = createProvider({ provider: 'slack' });

/** Slack's documented formula: v0=hex(HMAC-SHA256(secret, "v0:" + ts + ":" + body)). */
function headers(body: string, secret = SECRET, timestamp = NOW_S): Record<string, string> {
  const signature = createHmac('sha256', secret).update(`v0:${timestamp}:${body}`).digest('hex');
  return { 'X-Slack-Signature': `v0=${signature}`, 'X-Slack-Request-Timestamp': String(timestamp) };
}

describe('slack verify', () => {
  it('accepts a delivery signed per the documented formula', () => {
    expect(verdictOf(provider, request(BODY, headers(BODY), [SECRET]))).toBe('ok');
  });

  it('refuses a tampered body', () => {
    expect(verdictOf(provider, request(tampered(BODY), headers(BODY), [SECRET]))).toBe('signature_invalid');
  });

  it('refuses the same JSON re-serialised with other whitespace', () => {
    expect(verdictOf(provider, request(reserialised(BODY), headers(BODY), [SECRET]))).toBe(
      'signature_invalid',
    );
  });

  it('refuses a signature made with another secret', () => {
    expect(verdictOf(provider, request(BODY, headers(BODY, 'nope'), [SECRET]))).toBe('signature_invalid');
  });

  it('refuses timestamps past the tolerance in both directions', () => {
    expect(verdictOf(provider, request(BODY, headers(BODY, SECRET, NOW_S - 301), [SECRET]))).toBe(
      'timestamp_out_of_tolerance',
    );
    expect(verdictOf(provider, request(BODY, headers(BODY, SECRET, NOW_S + 301), [SECRET]))).toBe(
      'timestamp_out_of_tolerance',
    );
    expect(verdictOf(provider, request(BODY, headers(BODY, SECRET, NOW_S + 299), [SECRET]))).toBe('ok');
  });

  it('refuses a changed timestamp, since the timestamp is signed', () => {
    const h = { ...headers(BODY), 'X-Slack-Request-Timestamp': String(NOW_S + 1) };
    expect(verdictOf(provider, request(BODY, h, [SECRET]))).toBe('signature_invalid');
  });

  it('reports missing headers', () => {
    const h = headers(BODY);
    expect(verdictOf(provider, request(BODY, { 'X-Slack-Request-Timestamp': String(NOW_S) }, [SECRET]))).toBe(
      'signature_missing',
    );
    expect(
      verdictOf(provider, request(BODY, { 'X-Slack-Signature': h['X-Slack-Signature'] ?? '' }, [SECRET])),
    ).toBe('timestamp_missing');
  });

  it('refuses malformed headers', () => {
    const h = headers(BODY);
    const hex = (h['X-Slack-Signature'] ?? '').slice(3);
    expect(verdictOf(provider, request(BODY, { ...h, 'X-Slack-Signature': hex }, [SECRET]))).toBe(
      'signature_invalid',
    );
    expect(verdictOf(provider, request(BODY, { ...h, 'X-Slack-Signature': `v0=${hex}g` }, [SECRET]))).toBe(
      'signature_invalid',
    );
    expect(verdictOf(provider, request(BODY, { ...h, 'X-Slack-Request-Timestamp': 'soon' }, [SECRET]))).toBe(
      'timestamp_invalid',
    );
  });

  it('accepts a delivery signed with a previous secret among several configured', () => {
    expect(verdictOf(provider, request(BODY, headers(BODY, OLD_SECRET), [SECRET, OLD_SECRET]))).toBe('ok');
  });
});

describe('slack identify', () => {
  it('takes the event id and inner event type, keeping the retry headers', () => {
    const h = { ...headers(BODY), 'X-Slack-Retry-Num': '1', 'X-Slack-Retry-Reason': 'http_timeout' };
    expect(identify(provider, request(BODY, h, [SECRET]))).toEqual({
      ok: true,
      event: {
        eventId: 'Ev9UQ52YNA',
        eventType: 'app_mention',
        entityType: null,
        entityId: null,
        entityVersion: null,
        headers: { 'x-slack-retry-num': '1', 'x-slack-retry-reason': 'http_timeout' },
        idUnsigned: false,
      },
    });
  });

  it('falls back to the outer type when there is no inner event type', () => {
    const body = JSON.stringify({ type: 'event_callback', event_id: 'Ev1', event: {} });
    expect(identify(provider, request(body, headers(body), [SECRET]))).toMatchObject({
      ok: true,
      event: { eventType: 'event_callback' },
    });
  });

  it('answers a signed url_verification with the challenge and nothing to store', () => {
    const body = JSON.stringify({
      token: 'x',
      challenge: '3eZbrw1aBm2rZgRNFdxV2595E9CY3gmdALWMmHkvFXO7tYXAYM8P',
      type: 'url_verification',
    });
    expect(identify(provider, request(body, headers(body), [SECRET]))).toEqual({
      ok: true,
      reply: { status: 200, body: { challenge: '3eZbrw1aBm2rZgRNFdxV2595E9CY3gmdALWMmHkvFXO7tYXAYM8P' } },
    });
  });

  it('acknowledges an app_rate_limited notice without storing it', () => {
    const body = JSON.stringify({
      token: 'x',
      type: 'app_rate_limited',
      team_id: 'T1',
      minute_rate_limited: 1518467820,
    });
    expect(identify(provider, request(body, headers(body), [SECRET]))).toEqual({
      ok: true,
      reply: { status: 200, body: { ok: true } },
    });
  });

  it('does not answer an unsigned url_verification', () => {
    const body = JSON.stringify({ challenge: 'c', type: 'url_verification' });
    expect(verdictOf(provider, request(body, headers(body, 'attacker'), [SECRET]))).toBe('signature_invalid');
  });

  it('refuses an event without event_id', () => {
    const body = JSON.stringify({ type: 'event_callback', event: { type: 'message' } });
    expect(identify(provider, request(body, headers(body), [SECRET]))).toMatchObject({
      code: 'event_id_missing',
    });
  });
});
