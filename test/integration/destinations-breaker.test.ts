import { Registry } from 'prom-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { registerDestinationGauges } from '../../services/core/destinations/metrics.ts';
import { routesFrom } from '../../services/core/destinations/routes.ts';
import { createLogger } from '../../services/core/logging.ts';
import { type RunningDestinationRelay, startDestinationRelay } from '../../services/worker/destinations.ts';
import { createTestDatabase, type TestDatabase } from '../support/database.ts';
import { type FakeDownstream, startFakeDownstream } from '../support/fake-downstream.ts';
import {
  Claimer,
  startTestWorker,
  type TestWorker,
  waitFor,
  workerConfig,
} from '../support/worker-harness.ts';

// The circuit breaker against a real failing server: three failures open it; while open nothing
// is sent (the deliveries keep their retries); after the cooldown one probe goes out; a failed
// probe opens it again, a successful one closes it and the rest flows.

const COOLDOWN_MS = 1_000;
const EVENTS = 5;

let db: TestDatabase;
let downstream: FakeDownstream;
let claimer: Claimer;
let worker: TestWorker;
let relay: RunningDestinationRelay;
const registry = new Registry();

beforeAll(async () => {
  db = await createTestDatabase();
  downstream = await startFakeDownstream();
  const config = workerConfig({
    pay: {
      handler: 'record',
      destinations: {
        flaky: {
          url: `${downstream.url}/flaky`,
          concurrency: 1,
          retry: { limit: 20, backoff: '100ms', max: '100ms', jitter: 0 },
          breaker: { failures: 3, cooldown: `${COOLDOWN_MS}ms` },
        },
      },
    },
  });
  claimer = await Claimer.start(db.url, config);
  worker = await startTestWorker(db.url, config);
  registerDestinationGauges(registry, { db: db.pool, routes: routesFrom(config), cacheMs: 0 });
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
  await downstream?.close();
  await db?.drop();
});

async function breakerState(): Promise<string | undefined> {
  const metric = await registry.getSingleMetric('hookgate_destination_breaker_state')?.get();
  return metric?.values.find((v) => v.value === 1)?.labels.state as string | undefined;
}

describe('a destination breaker', () => {
  it('opens after consecutive failures, probes after its cooldown, and closes on a good probe', async () => {
    expect(await breakerState()).toBe('closed');
    // Three failures open it; the first probe fails too; the second probe succeeds.
    downstream.script('/flaky', [500, 500, 500, 503]);
    await claimer.claim(
      'pay',
      Array.from({ length: EVENTS }, (_, n) => ({ eventId: `evt_${n}`, eventType: 'invoice.paid' })),
    );
    await waitFor('every delivery', async () => {
      const { rows } = await db.pool.query<{ n: number }>(
        `SELECT count(*)::int AS n FROM hookgate.destination_deliveries WHERE status = 'delivered'`,
      );
      return rows[0]!.n === EVENTS;
    });
    const arrivals = downstream.requests.filter((r) => r.path === '/flaky').map((r) => r.at);
    // 4 failures and one success per event: no attempt was spent while the breaker was open.
    expect(arrivals).toHaveLength(4 + EVENTS);
    const { rows } = await db.pool.query<{ attempts: number }>(
      `SELECT sum(attempts)::int AS attempts FROM hookgate.destination_deliveries`,
    );
    expect(rows[0]!.attempts).toBe(4 + EVENTS);
    // The probes waited out the cooldown after the breaker opened (3rd failure) and reopened (4th)
    // (less 5 ms: the arrival times are whole milliseconds).
    expect(arrivals[3]! - arrivals[2]!).toBeGreaterThanOrEqual(COOLDOWN_MS - 5);
    expect(arrivals[4]! - arrivals[3]!).toBeGreaterThanOrEqual(COOLDOWN_MS - 5);
    expect(await breakerState()).toBe('closed');
    const { rows: breaker } = await db.pool.query(
      `SELECT state, consecutive_failures FROM hookgate.destination_breaker WHERE destination = 'flaky'`,
    );
    expect(breaker).toEqual([{ state: 'closed', consecutive_failures: 0 }]);
  });
});
