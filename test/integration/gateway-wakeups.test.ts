import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { WAKEUP_CHANNEL } from '../../services/core/queue/wakeup.ts';
import { createTestDatabase, type TestDatabase } from '../support/database.ts';
import { post, standardWebhook } from '../support/deliveries.ts';
import { SW_SECRET, startTestGateway, type TestGateway } from '../support/gateway.ts';
import {
  listeningWorkers,
  startTestWorker,
  type TestWorker,
  waitFor,
  workerConfig,
} from '../support/worker-harness.ts';

// Under load the gateway wakes the workers at most once per claim.wakeupInterval per endpoint;
// claims in between commit without a NOTIFY and are announced by the next wake-up. Polling is
// set far beyond the test's patience: only wake-ups can get these events applied in time, so
// a claim left unannounced (or a wake-up that reached busy loops and was dropped) fails it.
const INTERVAL_MS = 300;
const config = workerConfig(
  { woken: { handler: 'record' }, eager: { handler: 'record' } },
  { pollingInterval: '60s', concurrency: 1, batchSize: 5 },
);
const gatewayConfig = { ...config, claim: { ...config.claim, wakeupInterval: INTERVAL_MS } };

let db: TestDatabase;
let gateway: TestGateway;
let worker: TestWorker;
let listener: pg.Client;
/** Each wake-up seen on the channel: when, and for which endpoint (its payload). */
const wakeups: { at: number; endpoint: string }[] = [];
const wakeupsOf = (endpoint: string) => wakeups.filter((wakeup) => wakeup.endpoint === endpoint);

beforeAll(async () => {
  db = await createTestDatabase();
  worker = await startTestWorker(db.url, config);
  gateway = await startTestGateway(db.url, gatewayConfig);
  listener = new pg.Client({ connectionString: db.url });
  await listener.connect();
  listener.on('notification', (message) =>
    wakeups.push({ at: performance.now(), endpoint: message.payload ?? '' }),
  );
  await listener.query(`LISTEN ${WAKEUP_CHANNEL}`);
  await waitFor('the worker listening', async () => (await listeningWorkers(db.pool)) === 1);
  // A sentinel through the same path: once it is applied, the worker's loop has fetched and gone
  // to sleep for a minute, and only wake-ups can get the events below applied in time.
  const sentinel = standardWebhook(SW_SECRET, { type: 'thing.created' });
  expect((await post(`${gateway.url}/webhooks/woken`, sentinel)).status).toBe(200);
  await waitFor(
    'the sentinel applied',
    async () => (await processed('woken', [sentinel.eventId])) === 1,
    15_000,
  );
  await waitFor('the sentinel announced', async () => wakeups.length === 1);
  wakeups.length = 0;
}, 60_000);

afterAll(async () => {
  await listener?.end();
  await gateway?.stop();
  await worker?.stop();
  await db?.drop();
});

async function processed(endpoint: string, eventIds: readonly string[]): Promise<number> {
  const result = await db.pool.query(
    `SELECT count(*)::int AS n FROM hookgate.inbox WHERE endpoint = $1 AND event_id = ANY($2) AND status = 'processed'`,
    [endpoint, eventIds],
  );
  return result.rows[0].n;
}

describe('worker wake-ups under load', () => {
  it('announces every claim, with fewer wake-ups than claims', async () => {
    const eventIds: string[] = [];
    const started = performance.now();
    // One after another: each its own claim, all well within one interval. The worker fetches
    // 5 at a time, so it is busy while later wake-ups arrive.
    for (let n = 0; n < 24; n += 1) {
      const delivery = standardWebhook(SW_SECRET, { type: 'thing.created' });
      const reply = await post(`${gateway.url}/webhooks/woken`, delivery);
      expect(reply.status).toBe(200);
      eventIds.push(delivery.eventId);
    }
    const sent = performance.now() - started;
    await waitFor(
      'every event applied',
      async () => (await processed('woken', eventIds)) === eventIds.length,
      15_000,
    );
    expect(await processed('woken', eventIds)).toBe(eventIds.length);
    // At most one wake-up per interval with a claim and one on its own after it.
    const seen = wakeupsOf('woken').length;
    expect(seen).toBeGreaterThan(0);
    expect(seen).toBeLessThanOrEqual(2 * (Math.ceil(sent / INTERVAL_MS) + 1));
    expect(seen).toBeLessThan(eventIds.length);
  }, 30_000);

  // Its own endpoint: the first gateway's trailing wake-up for `woken` may still arrive meanwhile.
  it('an interval of 0 wakes with every claim', async () => {
    const eager = await startTestGateway(db.url, {
      ...config,
      claim: { ...config.claim, wakeupInterval: 0 },
    });
    try {
      const eventIds: string[] = [];
      for (let n = 0; n < 5; n += 1) {
        const delivery = standardWebhook(SW_SECRET, { type: 'thing.created' });
        const reply = await post(`${eager.url}/webhooks/eager`, delivery);
        expect(reply.status).toBe(200);
        eventIds.push(delivery.eventId);
      }
      // Applied, so every claim's NOTIFY has been delivered (to the worker, and to this listener
      // before any later one): a sixth would be counted by now.
      await waitFor('five applied', async () => (await processed('eager', eventIds)) === 5, 15_000);
      await waitFor('five wake-ups', async () => wakeupsOf('eager').length >= 5, 15_000);
      expect(wakeupsOf('eager').length).toBe(5);
    } finally {
      await eager.stop();
    }
  }, 30_000);
});
