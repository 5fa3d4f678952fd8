import { randomUUID } from 'node:crypto';
import type pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLogger } from '../../services/core/logging.ts';
import { applyQueue, jobIdFor } from '../../services/core/queue/names.ts';
import { settleDeadLetters } from '../../services/worker/dead-letter.ts';
import { createTestDatabase, createTestPool, type TestDatabase } from '../support/database.ts';
import { Claimer, workerConfig } from '../support/worker-harness.ts';

// A dead letter belongs to one generation of an event's job. When the event has been dispatched
// again since (requeue, `dedupe: observe`, a redelivery after prune: a fresh job under the same
// deterministic id), a late dead letter of the old generation must not settle the row, or the
// new dispatch is silently dropped.
const config = workerConfig({ dl: { handler: 'record' } });

let db: TestDatabase;
let claimer: Claimer;
let pool: pg.Pool;

beforeAll(async () => {
  db = await createTestDatabase();
  claimer = await Claimer.start(db.url, config);
  pool = createTestPool(db.url, 'test-dead-letter');
});

afterAll(async () => {
  await pool?.end();
  await claimer?.stop();
  await db?.drop();
});

const deadLetter = (eventId: string) => ({
  id: randomUUID(),
  retryCount: 0,
  eventId,
  sourceRetryCount: 7,
  // What an expired last attempt leaves: no reported failure.
  sourceOutput: null,
});

async function statusOf(eventId: string): Promise<string> {
  const row = await db.pool.query(`SELECT status FROM hookgate.inbox WHERE event_id = $1`, [eventId]);
  return row.rows[0].status;
}

describe('a late dead letter', () => {
  it('leaves a row dispatched again alone; without a live job it settles the row dead', async () => {
    await claimer.claim('dl', [{ eventId: 'again', eventType: 't', body: { id: 'again' } }]);
    const job = await db.pool.query(`SELECT state::text FROM pgboss.job WHERE name = $1 AND id = $2`, [
      applyQueue('dl'),
      jobIdFor('dl', 'again'),
    ]);
    // The premise: the row is pending with a live (fresh) job.
    expect(job.rows).toEqual([{ state: 'created' }]);
    const deps = { pool, boss: claimer.boss, logger: createLogger('silent') };

    expect(await settleDeadLetters(deps, 'dl', [deadLetter('again')])).toEqual([]);
    expect(await statusOf('again')).toBe('pending');

    // The same dead letter once that generation is over (its job finished): settled dead.
    await db.pool.query(`UPDATE pgboss.job SET state = 'failed', completed_on = now() WHERE id = $1`, [
      jobIdFor('dl', 'again'),
    ]);
    const settled = await settleDeadLetters(deps, 'dl', [deadLetter('again')]);
    expect(settled.map((e) => [e.eventId, e.status])).toEqual([['again', 'dead']]);
    expect(await statusOf('again')).toBe('dead');
  });
});
