import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase, type TestDatabase } from '../support/database.ts';
import {
  Claimer,
  listeningWorkers,
  startTestWorker,
  type TestWorker,
  waitFor,
  workerConfig,
} from '../support/worker-harness.ts';

// Polling is set far beyond the test's patience: only the claim's NOTIFY can get the event
// applied in time.
const config = workerConfig({ woken: { handler: 'record' } }, { pollingInterval: '60s' });

let db: TestDatabase;
let claimer: Claimer;
let worker: TestWorker;

beforeAll(async () => {
  db = await createTestDatabase();
  claimer = await Claimer.start(db.url, config);
  worker = await startTestWorker(db.url, config);
});

afterAll(async () => {
  await worker?.stop();
  await claimer?.stop();
  await db?.drop();
});

async function status(eventId: string): Promise<string | undefined> {
  const result = await db.pool.query(
    'SELECT status FROM hookgate.inbox WHERE endpoint = $1 AND event_id = $2',
    ['woken', eventId],
  );
  return result.rows[0]?.status;
}

describe('claim wake-ups', () => {
  it('wakes an idle worker when a claim commits, long before its next poll', async () => {
    await waitFor('the worker listening', async () => (await listeningWorkers(db.pool)) === 1);
    // A sentinel through the same path: once it is applied (by the loops' first fetch or by its
    // wake-up), every loop has fetched and gone to sleep for a minute, and each event after it
    // can only be applied in time by its claim's wake-up.
    for (const eventId of ['sentinel', 'wake-1', 'wake-2']) {
      await claimer.claim('woken', [{ eventId }]);
      await waitFor(`${eventId} processed`, async () => (await status(eventId)) === 'processed', 20_000);
      expect(await status(eventId)).toBe('processed');
    }
  });
});
