import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { WAKEUP_CHANNEL } from '../../services/core/queue/wakeup.ts';
import { createTestDatabase, type TestDatabase } from '../support/database.ts';
import { post, standardWebhook } from '../support/deliveries.ts';
import { SW_SECRET, startTestGateway, type TestGateway } from '../support/gateway.ts';
import { startTestWorker, type TestWorker, waitFor, workerConfig } from '../support/worker-harness.ts';

// Under load the gateway wakes the workers at most once per claim.wakeupInterval per endpoint;
// claims in between commit without a NOTIFY and are announced by the next wake-up. Polling is
// set far beyond the test's patience: only wake-ups can get these events applied in time, so
// a claim left unannounced (or a wake-up that reached busy loops and was dropped) fails it.
const INTERVAL_MS = 300;
const config = workerConfig(
  { woken: { handler: 'record' } },
  { pollingInterval: '60s', concurrency: 1, batchSize: 5 },
);
const gatewayConfig = { ...config, claim: { ...config.claim, wakeupInterval: INTERVAL_MS } };

let db: TestDatabase;
let gateway: TestGateway;
let worker: TestWorker;
let listener: pg.Client;
const wakeups: number[] = [];

beforeAll(async () => {
  db = await createTestDatabase();
  worker = await startTestWorker(db.url, config);
  gateway = await startTestGateway(db.url, gatewayConfig);
  listener = new pg.Client({ connectionString: db.url });
  await listener.connect();
  listener.on('notification', () => wakeups.push(performance.now()));
  await listener.query(`LISTEN ${WAKEUP_CHANNEL}`);
  // Let the worker's loop finish its first (empty) fetch and go to sleep for a minute.
  await new Promise((resolve) => setTimeout(resolve, 1_500));
}, 60_000);

afterAll(async () => {
  await listener?.end();
  await gateway?.stop();
  await worker?.stop();
  await db?.drop();
});

async function processed(eventIds: readonly string[]): Promise<number> {
  const result = await db.pool.query(
    `SELECT count(*)::int AS n FROM hookgate.inbox WHERE endpoint = 'woken' AND event_id = ANY($1) AND status = 'processed'`,
    [eventIds],
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
    await waitFor('every event applied', async () => (await processed(eventIds)) === eventIds.length, 15_000);
    expect(await processed(eventIds)).toBe(eventIds.length);
    // At most one wake-up per interval with a claim and one on its own after it.
    expect(wakeups.length).toBeGreaterThan(0);
    expect(wakeups.length).toBeLessThanOrEqual(2 * (Math.ceil(sent / INTERVAL_MS) + 1));
    expect(wakeups.length).toBeLessThan(eventIds.length);
  }, 30_000);

  it('an interval of 0 wakes with every claim', async () => {
    const eager = await startTestGateway(db.url, {
      ...config,
      claim: { ...config.claim, wakeupInterval: 0 },
    });
    try {
      wakeups.length = 0;
      for (let n = 0; n < 5; n += 1) {
        const reply = await post(
          `${eager.url}/webhooks/woken`,
          standardWebhook(SW_SECRET, { type: 'thing.created' }),
        );
        expect(reply.status).toBe(200);
      }
      await waitFor('five wake-ups', async () => wakeups.length >= 5, 5_000);
      expect(wakeups.length).toBe(5);
    } finally {
      await eager.stop();
    }
  }, 30_000);
});
