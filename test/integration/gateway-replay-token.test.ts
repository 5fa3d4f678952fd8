import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase, type TestDatabase } from '../support/database.ts';
import { post, stripeEvent } from '../support/deliveries.ts';
import { STRIPE_SECRET, startTestGateway, type TestGateway, testConfig } from '../support/gateway.ts';
import { parseExposition } from '../support/observability.ts';

// Re-posting an event with X-Hookgate-Replay-Token (when the endpoint has a replay secret) is
// accepted without the provider's signature, and flagged; a wrong token is a 401 leaving no row;
// an endpoint without a replay secret ignores the header and requires the signature.
const REPLAY_SECRET = 'replay-token-for-tests-0123456789';
let db: TestDatabase;
let gateway: TestGateway;
// A second gateway with a low limit, for guessing per source, on a clock the test moves: its
// window is an hour, passed by moving the clock rather than waited out, so that a slow machine
// can neither end it early nor make the test wait.
let limited: TestGateway;
const LIMIT = 3;
let clockOffsetMs = 0;
const limitedClock = () => Date.now() + clockOffsetMs;

beforeAll(async () => {
  db = await createTestDatabase();
  gateway = await startTestGateway(
    db.url,
    testConfig({
      endpoints: {
        stripe: {
          provider: 'stripe',
          secrets: [STRIPE_SECRET],
          replaySecrets: ['an-older-replay-secret-xyz', REPLAY_SECRET],
        },
        plain: { provider: 'stripe', secrets: [STRIPE_SECRET] },
      },
    }),
  );
  limited = await startTestGateway(
    db.url,
    testConfig({
      server: { replayTokenLimit: { maxFailures: LIMIT, window: '1h' } },
      endpoints: {
        guarded: { provider: 'stripe', secrets: [STRIPE_SECRET], replaySecrets: [REPLAY_SECRET] },
        other: { provider: 'stripe', secrets: [STRIPE_SECRET], replaySecrets: [REPLAY_SECRET] },
      },
    }),
    undefined,
    limitedClock,
  );
});

afterAll(async () => {
  await limited?.stop();
  await gateway?.stop();
  await db?.drop();
});

async function row(endpoint: string, eventId: string) {
  const result = await db.pool.query<{ received_via: string | null; headers: Record<string, string> }>(
    'SELECT received_via, headers FROM hookgate.inbox WHERE endpoint = $1 AND event_id = $2',
    [endpoint, eventId],
  );
  return result.rows[0];
}

/** A Stripe event body with no Stripe-Signature at all, as an operator re-posts it. */
function unsigned(eventId: string, token?: string) {
  const { body } = stripeEvent(STRIPE_SECRET, { eventId });
  const headers: Record<string, string> = { 'content-type': 'application/json' };
  if (token !== undefined) headers['x-hookgate-replay-token'] = token;
  return { body, headers };
}

async function outcomes(endpoint: string, on: TestGateway = gateway): Promise<Map<string, number>> {
  const text = await on.registry.metrics();
  const found = new Map<string, number>();
  for (const [key, value] of parseExposition(text)) {
    const match = new RegExp(
      `^hookgate_deliveries_total\\{.*endpoint="${endpoint}".*outcome="([a-z_]+)"`,
    ).exec(key);
    if (match) found.set(match[1]!, value);
  }
  return found;
}

describe('replay token', () => {
  it('a wrong token is refused with 401, leaves no row, and is counted', async () => {
    const reply = await post(`${gateway.url}/webhooks/stripe`, unsigned('evt_wrong', 'not-the-token'));
    expect(reply.status).toBe(401);
    expect(reply.json).toMatchObject({ error: 'replay_token_invalid' });
    expect(await row('stripe', 'evt_wrong')).toBeUndefined();
    // A token of the right length but wrong content too (constant-time comparison, no prefix luck).
    const same = await post(
      `${gateway.url}/webhooks/stripe`,
      unsigned('evt_wrong2', `${REPLAY_SECRET.slice(0, -1)}X`),
    );
    expect(same.status).toBe(401);
    expect((await outcomes('stripe')).get('replay_token_invalid')).toBe(2);
  });

  it('the right token is accepted without a signature and flagged; dedupe is unchanged', async () => {
    const first = await post(`${gateway.url}/webhooks/stripe`, unsigned('evt_replayed', REPLAY_SECRET));
    expect(first.status, JSON.stringify(first.json)).toBe(200);
    expect(first.json).toMatchObject({ status: 'accepted', event_id: 'evt_replayed' });
    const stored = await row('stripe', 'evt_replayed');
    expect(stored?.received_via).toBe('replay_token');
    expect(JSON.stringify(stored?.headers)).not.toContain(REPLAY_SECRET);
    const again = await post(`${gateway.url}/webhooks/stripe`, unsigned('evt_replayed', REPLAY_SECRET));
    expect(again.json).toMatchObject({ status: 'duplicate' });
    // The older secret in the list works too (rotation).
    const older = await post(
      `${gateway.url}/webhooks/stripe`,
      unsigned('evt_older', 'an-older-replay-secret-xyz'),
    );
    expect(older.status).toBe(200);
    // A signed delivery is not flagged.
    const signed = stripeEvent(STRIPE_SECRET, { eventId: 'evt_signed' });
    expect((await post(`${gateway.url}/webhooks/stripe`, signed)).status).toBe(200);
    expect((await row('stripe', 'evt_signed'))?.received_via).toBeNull();
  });

  it('without a replay secret the header is ignored and the signature is required', async () => {
    const reply = await post(`${gateway.url}/webhooks/plain`, unsigned('evt_plain', REPLAY_SECRET));
    expect(reply.status).toBe(401);
    expect(reply.json).toMatchObject({ error: 'signature_missing' });
    expect(await row('plain', 'evt_plain')).toBeUndefined();
    const signed = stripeEvent(STRIPE_SECRET, { eventId: 'evt_plain_signed' });
    const accepted = await post(`${gateway.url}/webhooks/plain`, {
      body: signed.body,
      headers: { ...signed.headers, 'x-hookgate-replay-token': 'whatever' },
    });
    expect(accepted.status).toBe(200);
    expect((await row('plain', 'evt_plain_signed'))?.received_via).toBeNull();
  });
});

describe('replay token guessing is limited per source', () => {
  const url = () => `${limited.url}/webhooks/guarded`;
  // Loopback is a /8: a client bound to 127.0.0.2 is another source to the gateway.
  const OTHER = { localAddress: '127.0.0.2' };
  let retryAfter = 0;

  it(`after ${LIMIT} wrong tokens the source gets 429 with Retry-After, even with the right token, and no row`, async () => {
    for (let i = 0; i < LIMIT; i += 1) {
      const wrong = await post(url(), unsigned(`evt_guess_${i}`, `wrong-guess-${i}`));
      expect(wrong.status).toBe(401);
    }
    const next = await post(url(), unsigned('evt_guess_next', 'wrong-guess-next'));
    expect(next.status).toBe(429);
    expect(next.json).toMatchObject({ error: 'replay_token_rate_limited' });
    const right = await post(url(), unsigned('evt_limited_right', REPLAY_SECRET));
    expect(right.status).toBe(429);
    retryAfter = Number(right.headers['retry-after']);
    expect(retryAfter).toBeGreaterThanOrEqual(1);
    expect(retryAfter).toBeLessThanOrEqual(3_600);
    expect(await row('guarded', 'evt_limited_right')).toBeUndefined();
    expect(await row('guarded', 'evt_guess_next')).toBeUndefined();
    const counted = await outcomes('guarded', limited);
    expect(counted.get('replay_token_invalid')).toBe(LIMIT);
    expect(counted.get('replay_token_rate_limited')).toBe(2);
    // X-Forwarded-For is not trusted by default: claiming another client does not escape.
    const spoofed = await post(url(), {
      ...unsigned('evt_spoofed', REPLAY_SECRET),
      headers: { ...unsigned('evt_spoofed', REPLAY_SECRET).headers, 'x-forwarded-for': '203.0.113.9' },
    });
    expect(spoofed.status).toBe(429);
    // The Express route (any spelling other than the canonical path) applies the same limit.
    const viaExpress = await post(`${url()}?via=express`, unsigned('evt_via_express', REPLAY_SECRET));
    expect(viaExpress.status).toBe(429);
  });

  it('the limited source still delivers signed events, and other sources and endpoints keep their tokens', async () => {
    expect(retryAfter, 'the source was limited in the test before').toBeGreaterThan(0);
    const signed = stripeEvent(STRIPE_SECRET, { eventId: 'evt_limited_signed' });
    expect((await post(url(), signed)).status).toBe(200);
    expect((await row('guarded', 'evt_limited_signed'))?.received_via).toBeNull();
    // The limit is per source: the premise is that the source above is still limited.
    expect((await post(url(), unsigned('evt_still_limited', REPLAY_SECRET))).status).toBe(429);
    const other = await post(url(), unsigned('evt_other_source', REPLAY_SECRET), OTHER);
    expect(other.status, JSON.stringify(other.json)).toBe(200);
    expect((await row('guarded', 'evt_other_source'))?.received_via).toBe('replay_token');
    // ... and per endpoint.
    const elsewhere = await post(
      `${limited.url}/webhooks/other`,
      unsigned('evt_other_endpoint', REPLAY_SECRET),
    );
    expect(elsewhere.status).toBe(200);
  });

  it('once the window has passed, the right token from the limited source is accepted', async () => {
    expect(retryAfter, 'the source was limited in the first test').toBeGreaterThan(0);
    clockOffsetMs += retryAfter * 1000 + 200;
    const right = await post(url(), unsigned('evt_after_window', REPLAY_SECRET));
    expect(right.status, JSON.stringify(right.json)).toBe(200);
    expect((await row('guarded', 'evt_after_window'))?.received_via).toBe('replay_token');
  });
});
