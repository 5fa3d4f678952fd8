import { createHmac } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { createProvider } from '../../../services/core/providers/index.ts';
import { identify, NOW_S, request, reserialised, tampered, verdictOf } from './fixtures.ts';

const SECRET = 'pdl_ntfset_01hv8x_current';
const OLD_SECRET = 'pdl_ntfset_01hv8x_previous';
const BODY = JSON.stringify({
  event_id: 'evt_01hv8x2a3f',
  event_type: 'subscription.updated',
  occurred_at: '2024-04-12T10:18:50.000000Z',
  notification_id: 'ntf_01hv8x',
  data: { id: 'sub_01hv8wxyz', status: 'active', updated_at: '2024-04-12T10:18:49.621022Z' },
});

const provider = createProvider({ provider: 'paddle' });

/** Paddle's documented formula: h1 = hex(HMAC-SHA256(secret, ts + ":" + body)). */
function h1(body: string, secret = SECRET, timestamp = NOW_S): string {
  return createHmac('sha256', secret).update(`${timestamp}:${body}`).digest('hex');
}

function headers(body: string, secret = SECRET, timestamp = NOW_S): Record<string, string> {
  return { 'Paddle-Signature': `ts=${timestamp};h1=${h1(body, secret, timestamp)}` };
}

describe('paddle verify', () => {
  it('refuses a space after the semicolon, as the Paddle SDK splits it', () => {
    const value = headers(BODY)['Paddle-Signature'] ?? '';
    expect(value).toContain(';h1=');
    expect(
      verdictOf(provider, request(BODY, { 'Paddle-Signature': value.replace(';', '; ') }, [SECRET])),
    ).toBe('signature_invalid');
  });

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
  });

  it('reports missing headers', () => {
    expect(verdictOf(provider, request(BODY, {}, [SECRET]))).toBe('signature_missing');
    expect(verdictOf(provider, request(BODY, { 'Paddle-Signature': `h1=${h1(BODY)}` }, [SECRET]))).toBe(
      'timestamp_missing',
    );
  });

  it('refuses malformed headers', () => {
    const check = (value: string) =>
      verdictOf(provider, request(BODY, { 'Paddle-Signature': value }, [SECRET]));
    expect(check(`ts=${NOW_S}`)).toBe('signature_invalid');
    expect(check(`ts=${NOW_S};h1=${h1(BODY)}xyz`)).toBe('signature_invalid');
    expect(check(`ts=now;h1=${h1(BODY)}`)).toBe('timestamp_invalid');
    expect(check(`ts=${NOW_S};ts=${NOW_S};h1=${h1(BODY)}`)).toBe('timestamp_invalid');
  });

  it('accepts a delivery signed with a previous secret among several configured', () => {
    expect(verdictOf(provider, request(BODY, headers(BODY, OLD_SECRET), [SECRET, OLD_SECRET]))).toBe('ok');
  });

  it('accepts any matching h1, not only the last one', () => {
    const good = h1(BODY);
    const stale = h1(BODY, 'rotated-out');
    for (const value of [`ts=${NOW_S};h1=${good};h1=${stale}`, `ts=${NOW_S};h1=${stale};h1=${good}`]) {
      expect(verdictOf(provider, request(BODY, { 'Paddle-Signature': value }, [SECRET]))).toBe('ok');
    }
  });
});

describe('paddle identify', () => {
  it('takes id, type, entity from the type prefix and data.id, version from data.updated_at exactly', () => {
    expect(identify(provider, request(BODY, headers(BODY), [SECRET]))).toEqual({
      ok: true,
      event: {
        eventId: 'evt_01hv8x2a3f',
        eventType: 'subscription.updated',
        entityType: 'subscription',
        entityId: 'sub_01hv8wxyz',
        entityVersion: '1712917129621022',
        headers: {},
        idUnsigned: false,
      },
    });
  });

  it('falls back to occurred_at when data has no updated_at', () => {
    const body = JSON.stringify({
      event_id: 'evt_2',
      event_type: 'transaction.completed',
      occurred_at: '2024-04-12T10:18:49.000001Z',
      data: { id: 'txn_1' },
    });
    expect(identify(provider, request(body, headers(body), [SECRET]))).toMatchObject({
      ok: true,
      event: { entityType: 'transaction', entityId: 'txn_1', entityVersion: '1712917129000001' },
    });
  });

  it('refuses a body without event_id or event_type', () => {
    const noId = JSON.stringify({ event_type: 'x.y' });
    const noType = JSON.stringify({ event_id: 'evt_3' });
    expect(identify(provider, request(noId, headers(noId), [SECRET]))).toMatchObject({
      code: 'event_id_missing',
    });
    expect(identify(provider, request(noType, headers(noType), [SECRET]))).toMatchObject({
      code: 'event_type_missing',
    });
  });

  it('applies a version override', () => {
    const withOverride = createProvider({ provider: 'paddle', extract: { version: '/occurred_at' } });
    expect(identify(withOverride, request(BODY, headers(BODY), [SECRET]))).toMatchObject({
      ok: true,
      event: { entityVersion: '1712917130000000' },
    });
  });
});
