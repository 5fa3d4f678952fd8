import { Webhook } from 'standardwebhooks';
import Stripe from 'stripe';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEFAULT_DEDUPE_HORIZON_MS } from '../../services/core/config/dedupe-schema.ts';
import { routesFrom } from '../../services/core/destinations/routes.ts';
import { createLogger } from '../../services/core/logging.ts';
import { prune } from '../../services/core/retention/prune.ts';
import { type RunningDestinationRelay, startDestinationRelay } from '../../services/worker/destinations.ts';
import { createTestDatabase, type TestDatabase } from '../support/database.ts';
import { type FakeDownstream, startFakeDownstream } from '../support/fake-downstream.ts';
import { STRIPE_SECRET, startTestGateway, type TestGateway } from '../support/gateway.ts';
import {
  Claimer,
  startTestWorker,
  type TestWorker,
  waitFor,
  workerConfig,
} from '../support/worker-harness.ts';

// `body: raw`: a Stripe delivery received by the real gateway, applied by the real worker and sent
// on by the destination relay with the provider's original bytes and its `stripe-signature`, so
// the receiver verifies Stripe's own signature with Stripe's SDK. `body: event` beside it sends
// the stored payload (jsonb's rendering, not the bytes) and passes no provider header on. The
// bytes are kept only for endpoints with a raw destination, by either claim path, and go with
// their inbox row when it is pruned.

const stripe = new Stripe('sk_test_hookgate');
const SIGNING_SECRET = `whsec_${Buffer.from('a raw destination signing secret').toString('base64')}`;

let db: TestDatabase;
let downstream: FakeDownstream;
let gateway: TestGateway;
let worker: TestWorker;
let relay: RunningDestinationRelay;
let claimer: Claimer;

const stripeEndpoint = (destinations: Record<string, unknown>, extra: Record<string, unknown> = {}) => ({
  provider: 'stripe',
  secrets: [STRIPE_SECRET],
  handler: 'record',
  destinations,
  ...extra,
});

beforeAll(async () => {
  db = await createTestDatabase();
  downstream = await startFakeDownstream();
  const raw = (path: string) => ({
    url: `${downstream.url}/${path}`,
    body: 'raw',
    passthroughHeaders: ['Stripe-Signature'],
  });
  const endpoints = {
    // One raw and one event destination on the same events.
    // One raw (signed as well), one raw passing nothing on, one event destination, same events.
    stripe: stripeEndpoint({
      raw: { ...raw('raw'), signing: { secrets: ['${RAW_SIGNING_SECRET}'] } },
      bare: { url: `${downstream.url}/bare`, body: 'raw' },
      event: { url: `${downstream.url}/event` },
    }),
    // No raw destination: nothing kept.
    plain: stripeEndpoint({ event: { url: `${downstream.url}/plain` } }),
    // `dedupe: observe` takes the transactional claim: the bytes are kept there too.
    observed: stripeEndpoint({ raw: raw('observed') }, { dedupe: 'observe' }),
  };
  // A destination's signing secret is a reference in the configuration (literals are refused).
  const config = workerConfig(endpoints, {}, { RAW_SIGNING_SECRET: SIGNING_SECRET });
  gateway = await startTestGateway(db.url, config);
  worker = await startTestWorker(db.url, config);
  claimer = await Claimer.start(db.url, config);
  relay = startDestinationRelay({
    pool: worker.pool,
    routes: routesFrom(config),
    logger: createLogger('silent'),
    pollIntervalMs: 50,
  });
});

afterAll(async () => {
  await relay?.stop();
  await worker?.stop();
  await claimer?.stop();
  await gateway?.stop();
  await downstream?.close();
  await db?.drop();
});

/** A Stripe event as Stripe's bytes might be: indented, keys unsorted, escapes jsonb rewrites. */
function stripeBytes(id: string): string {
  return `{\n  "object": "event",\n  "type": "invoice.paid",\n  "id": "${id}",\n  "data": { "object": { "id": "in_1", "amount_paid": 1.50, "description": "caf\\u00e9 \u20ac" } }\n}\n`;
}

async function send(endpoint: string, body: string): Promise<string> {
  const signature = stripe.webhooks.generateTestHeaderString({ payload: body, secret: STRIPE_SECRET });
  const response = await fetch(`${gateway.url}/webhooks/${endpoint}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'stripe-signature': signature },
    body,
  });
  expect(response.status).toBe(200);
  return signature;
}

async function rawRows(): Promise<{ endpoint: string; event_id: string; body: Buffer }[]> {
  const { rows } = await db.pool.query<{ endpoint: string; event_id: string; body: Buffer }>(
    `SELECT endpoint, event_id, body FROM hookgate.inbox_raw ORDER BY endpoint, event_id`,
  );
  return rows;
}

describe('body: raw', () => {
  it("sends Stripe's own bytes and stripe-signature, which Stripe's SDK verifies; body: event passes no header on", async () => {
    const bytes = stripeBytes('evt_raw_1');
    const signature = await send('stripe', bytes);
    const [rawRequest] = await downstream.waitFor('/raw', 1, 30_000);
    const [eventRequest] = await downstream.waitFor('/event', 1, 30_000);

    // Byte for byte what Stripe sent, with Stripe's signature header as it came.
    expect(Buffer.from(rawRequest!.body, 'utf8').equals(Buffer.from(bytes, 'utf8'))).toBe(true);
    expect(rawRequest!.headers['stripe-signature']).toBe(signature);
    // The receiver's own check, with Stripe's SDK and the same secret.
    const verified = stripe.webhooks.constructEvent(rawRequest!.body, signature, STRIPE_SECRET);
    expect(verified.id).toBe('evt_raw_1');
    // The relay's own headers still come with it, its Standard Webhooks signature over the bytes.
    expect(rawRequest!.headers['idempotency-key']).toBe(rawRequest!.headers['webhook-id']);
    expect(rawRequest!.headers['x-hookgate-destination']).toBe('raw');
    new Webhook(SIGNING_SECRET).verify(rawRequest!.body, {
      'webhook-id': String(rawRequest!.headers['webhook-id']),
      'webhook-timestamp': String(rawRequest!.headers['webhook-timestamp']),
      'webhook-signature': String(rawRequest!.headers['webhook-signature']),
    });
    // A raw destination passes on only the headers it names itself.
    const [bare] = await downstream.waitFor('/bare', 1, 30_000);
    expect(bare!.body).toBe(bytes);
    expect(bare!.headers['stripe-signature']).toBeUndefined();

    // body: event: the stored payload (jsonb's rendering: not the bytes, so Stripe's signature
    // does not hold for it) and no provider header.
    expect(eventRequest!.headers['stripe-signature']).toBeUndefined();
    expect(eventRequest!.body).not.toBe(bytes);
    expect(JSON.parse(eventRequest!.body)).toEqual(JSON.parse(bytes));
    expect(() => stripe.webhooks.constructEvent(eventRequest!.body, signature, STRIPE_SECRET)).toThrow();
  });

  it('keeps bytes only for endpoints with a raw destination, on both claim paths', async () => {
    await send('plain', stripeBytes('evt_plain_1'));
    const observedBytes = stripeBytes('evt_observed_1');
    const signature = await send('observed', observedBytes);
    const [observed] = await downstream.waitFor('/observed', 1, 30_000);
    expect(observed!.body).toBe(observedBytes);
    expect(stripe.webhooks.constructEvent(observed!.body, signature, STRIPE_SECRET).id).toBe(
      'evt_observed_1',
    );
    await downstream.waitFor('/plain', 1, 30_000);
    const rows = await rawRows();
    expect(rows.map((r) => [r.endpoint, r.event_id])).toEqual([
      ['observed', 'evt_observed_1'],
      ['stripe', 'evt_raw_1'],
    ]);
    // A duplicate keeps nothing more (and the first bytes stay).
    await send('stripe', stripeBytes('evt_raw_1').replace('1.50', '1.5'));
    const again = await rawRows();
    expect(again.find((r) => r.endpoint === 'stripe')!.body.toString()).toBe(stripeBytes('evt_raw_1'));
  });

  it('an event whose bytes were not kept is dead at once, saying why', async () => {
    // Claimed as a replay would be: no bytes come with it.
    await claimer.claim('stripe', [{ eventId: 'evt_nobytes', eventType: 'invoice.paid' }]);
    const row = await waitFor('the raw delivery to end', async () => {
      const { rows } = await db.pool.query<{ status: string; last_error: string | null }>(
        `SELECT status, last_error FROM hookgate.destination_deliveries
          WHERE destination = 'raw' AND event_id = 'evt_nobytes' AND status IN ('dead', 'delivered')`,
      );
      return rows[0] ?? null;
    });
    expect(row.status).toBe('dead');
    expect(row.last_error).toContain('original bytes were not kept for this event');
    expect(downstream.requests.filter((r) => r.path === '/raw')).toHaveLength(1);
  });

  it('goes with its inbox row when prune deletes it, and stays while the row stays', async () => {
    // Both events 40 days old; one of them dead (never pruned), so its bytes stay too.
    await db.pool.query(`UPDATE hookgate.inbox SET received_at = now() - interval '40 days'`);
    await db.pool.query(`UPDATE hookgate.inbox_raw SET received_at = now() - interval '40 days'`);
    await db.pool.query(`UPDATE hookgate.inbox SET status = 'dead' WHERE event_id = 'evt_observed_1'`);
    await prune(db.pool, {
      inboxOlderThanMs: 30 * 86_400_000,
      dedupe: { now: new Date(), horizonMs: DEFAULT_DEDUPE_HORIZON_MS },
      deliveriesOlderThanMs: 90 * 86_400_000,
      chunk: 1,
      actor: 'test',
    });
    expect((await rawRows()).map((r) => [r.endpoint, r.event_id])).toEqual([['observed', 'evt_observed_1']]);
  });
});
