import { afterAll, beforeAll, describe, expect, it } from 'vitest';
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

// The breaker's rate rule against a real server that fails every other request: the failures
// are never consecutive (breaker.failures is 3, the longest run is 1), yet once 5 attempts were
// made and 3 of them failed (60 % >= 50 %) the breaker opens: nothing is sent until the cooldown's
// probe, whose success closes it, and the rest flows.

const COOLDOWN_MS = 1_500;
const EVENTS = 6;

let db: TestDatabase;
let downstream: FakeDownstream;
let claimer: Claimer;
let worker: TestWorker;
let relay: RunningDestinationRelay;

beforeAll(async () => {
  db = await createTestDatabase();
  downstream = await startFakeDownstream();
  const config = workerConfig({
    pay: {
      handler: 'record',
      destinations: {
        alternating: {
          url: `${downstream.url}/alternating`,
          concurrency: 1,
          retry: { limit: 20, backoff: '100ms', max: '100ms', jitter: 0 },
          breaker: {
            failures: 3,
            cooldown: `${COOLDOWN_MS}ms`,
            rate: { ratio: 0.5, window: '1m', minimum: 5 },
          },
        },
      },
    },
  });
  claimer = await Claimer.start(db.url, config);
  worker = await startTestWorker(db.url, config);
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

describe('a destination breaker with a rate rule', () => {
  it('opens on alternating failures that never reach the consecutive threshold', async () => {
    downstream.script('/alternating', [500, 200, 500, 200, 500]);
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
    const arrivals = downstream.requests.filter((r) => r.path === '/alternating').map((r) => r.at);
    // 3 failures and one success per event: no attempt was spent while the breaker was open.
    expect(arrivals).toHaveLength(3 + EVENTS);
    const { rows } = await db.pool.query<{ attempts: number }>(
      `SELECT sum(attempts)::int AS attempts FROM hookgate.destination_deliveries`,
    );
    expect(rows[0]!.attempts).toBe(3 + EVENTS);
    // Deliveries were due all along (four events still waiting), yet the request after the 5th
    // attempt waited out the cooldown: the breaker was open (less 5 ms: whole milliseconds).
    // The script never fails twice in a row: the consecutive rule (3) cannot have fired.
    expect(arrivals[5]! - arrivals[4]!).toBeGreaterThanOrEqual(COOLDOWN_MS - 5);
    // The successful probe closed it and emptied its window.
    const { rows: breaker } = await db.pool.query(
      `SELECT state, consecutive_failures, rate_failures FROM hookgate.destination_breaker
        WHERE destination = 'alternating'`,
    );
    expect(breaker).toEqual([{ state: 'closed', consecutive_failures: 0, rate_failures: 0 }]);
  });
});
