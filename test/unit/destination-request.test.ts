import { Webhook } from 'standardwebhooks';
import { describe, expect, it } from 'vitest';
import { retryAfterSecondsOf as retryAfterSeconds } from '../../services/worker/destination-http.ts';
import { headerValue, requestHeaders, retryDelayMs } from '../../services/worker/destination-request.ts';

const NEW = `whsec_${Buffer.from('the new signing secret').toString('base64')}`;
const OLD = `whsec_${Buffer.from('the old signing secret').toString('base64')}`;
const delivery = {
  endpoint: 'pay',
  destination: 'ledger',
  eventId: 'evt_1',
  eventType: 'invoice.paid',
  webhookId: 'msg_abc',
  body: '{"id": "evt_1"}',
};

describe('a destination request', () => {
  it('is signed with every secret, each checked by the Standard Webhooks SDK (rotation)', () => {
    const now = Date.UTC(2026, 11, 1);
    const headers = requestHeaders(
      { signing: { secrets: [NEW, OLD] }, headers: { 'X-Team': 'a' } },
      delivery,
      now,
    );
    expect(headers['webhook-id']).toBe('msg_abc');
    expect(headers['idempotency-key']).toBe('msg_abc');
    expect(headers['webhook-timestamp']).toBe(String(now / 1000));
    expect(headers['webhook-signature']?.split(' ')).toHaveLength(2);
    expect(headers['X-Team']).toBe('a');
    for (const secret of [NEW, OLD]) {
      const webhook = new Webhook(secret);
      // The SDK checks the timestamp against its clock: verify at the signing time.
      const realNow = Date.now;
      Date.now = () => now;
      try {
        expect(webhook.verify(delivery.body, headers)).toEqual({ id: 'evt_1' });
      } finally {
        Date.now = realNow;
      }
    }
  });

  it('is unsigned without signing secrets', () => {
    const headers = requestHeaders({}, delivery, Date.now());
    expect(headers['webhook-signature']).toBeUndefined();
    expect(headers['webhook-timestamp']).toBeUndefined();
    expect(headers['webhook-id']).toBe('msg_abc');
  });
});

describe('the retry schedule', () => {
  const retry = { limit: 10, backoff: 1_000, max: 10_000, jitter: 0.5 };

  it('doubles per retry up to the cap, less up to `jitter` of it', () => {
    expect([1, 2, 3, 4, 5, 6].map((n) => retryDelayMs(retry, n, undefined, () => 0))).toEqual([
      1_000, 2_000, 4_000, 8_000, 10_000, 10_000,
    ]);
    expect(retryDelayMs(retry, 3, undefined, () => 1)).toBe(2_000);
    expect(retryDelayMs({ ...retry, jitter: 0 }, 3, undefined, () => 1)).toBe(4_000);
  });

  it('waits at least what Retry-After asked, within the cap', () => {
    expect(retryDelayMs(retry, 1, 5, () => 0)).toBe(5_000);
    expect(retryDelayMs(retry, 1, 3_600, () => 0)).toBe(10_000);
  });
});

describe('Retry-After', () => {
  it('reads delay-seconds and HTTP-dates, and nothing else', () => {
    const now = Date.parse('2026-11-30T12:00:00Z');
    expect(retryAfterSeconds('120', now)).toBe(120);
    expect(retryAfterSeconds(' 0 ', now)).toBe(0);
    expect(retryAfterSeconds('Mon, 30 Nov 2026 12:00:30 GMT', now)).toBe(30);
    expect(retryAfterSeconds('Mon, 30 Nov 2026 11:00:00 GMT', now)).toBe(0);
    expect(retryAfterSeconds(null, now)).toBeNull();
    expect(retryAfterSeconds('soon', now)).toBeNull();
    expect(retryAfterSeconds('-5', now)).toBeNull();
    expect(retryAfterSeconds('2026', now)).toBe(2026);
  });
});

describe('header values from the provider', () => {
  it('go as they are when legal, else percent-encoded (UTF-8), one-to-one', () => {
    expect(headerValue('evt_plain-5:a/b')).toBe('evt_plain-5:a/b');
    expect(headerValue('order placed')).toBe('order placed');
    expect(headerValue('a\r\nx-injected: 1')).toBe('a%0D%0Ax-injected:%201');
    expect(headerValue('évt')).toBe('%C3%A9vt');
    // `%` itself is encoded: a value with an escape and one with the character stay apart.
    expect(headerValue('evt-6-\n')).toBe('evt-6-%0A');
    expect(headerValue('evt-6-%0A')).toBe('evt-6-%250A');
    for (const value of ['a\r\nb', 'évt-3-✓-😀', ' leading', 'trailing ', 'x%41'])
      expect(decodeURIComponent(headerValue(value))).toBe(value);
  });
});
