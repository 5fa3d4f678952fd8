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

// A destination that never answers holds its own slots and nothing else: the healthy destination
// beside it delivers everything, and the events are applied, while every request to the hanging
// one is still open.

const EVENTS = 12;
const HANGING_CONCURRENCY = 2;

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
        // Longer than any test run: it is still hanging when the file ends.
        hanging: { url: `${downstream.url}/hanging`, timeout: '120s', concurrency: HANGING_CONCURRENCY },
        healthy: { url: `${downstream.url}/healthy`, concurrency: 1 },
      },
    },
  });
  downstream.script(
    '/hanging',
    Array.from({ length: EVENTS }, () => ({ status: 200, delayMs: 600_000 })),
  );
  claimer = await Claimer.start(db.url, config);
  worker = await startTestWorker(db.url, config);
  relay = startDestinationRelay({
    pool: worker.pool,
    routes: routesFrom(config),
    logger: createLogger('silent'),
    pollIntervalMs: 50,
    stopTimeoutMs: 100,
  });
});

afterAll(async () => {
  await relay?.stop();
  await worker?.stop();
  await claimer?.stop();
  await downstream?.close();
  await db?.drop();
});

describe('a hanging destination', () => {
  it('starves neither the healthy destination beside it nor the apply', async () => {
    await claimer.claim(
      'pay',
      Array.from({ length: EVENTS }, (_, n) => ({ eventId: `evt_${n}`, eventType: 'invoice.paid' })),
    );
    await waitFor('every delivery to the healthy destination', async () => {
      const { rows } = await db.pool.query<{ n: number }>(
        `SELECT count(*)::int AS n FROM hookgate.destination_deliveries
          WHERE destination = 'healthy' AND status = 'delivered'`,
      );
      return rows[0]!.n === EVENTS;
    });
    const { rows: inbox } = await db.pool.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM hookgate.inbox WHERE status = 'processed'`,
    );
    expect(inbox[0]!.n).toBe(EVENTS);
    // The hanging destination has exactly its slots in flight, none answered, the rest waiting.
    await downstream.waitFor('/hanging', HANGING_CONCURRENCY);
    const { rows: hanging } = await db.pool.query<{ status: string; n: number }>(
      `SELECT status, count(*)::int AS n FROM hookgate.destination_deliveries
        WHERE destination = 'hanging' GROUP BY status ORDER BY status`,
    );
    expect(hanging).toEqual([
      { status: 'pending', n: EVENTS - HANGING_CONCURRENCY },
      { status: 'sending', n: HANGING_CONCURRENCY },
    ]);
    expect(downstream.requests.filter((r) => r.path === '/hanging')).toHaveLength(HANGING_CONCURRENCY);
  });
});
