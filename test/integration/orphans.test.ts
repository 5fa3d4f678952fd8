import type pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sweepOrphans } from '../../services/core/inbox/orphans.ts';
import { applyQueue } from '../../services/core/queue/names.ts';
import { createTestDatabase, createTestPool, type TestDatabase } from '../support/database.ts';
import { Claimer, workerConfig } from '../support/worker-harness.ts';

// A pending row must never be stranded by what happened to its job: the sweeper sends it again
// when its job is finished or gone, leaves it alone while its job is live, and ends it (parked
// or dead, as its last error says) when it has no attempt left.
const config = workerConfig({ orph: { handler: 'record' } });
const MAX_ATTEMPTS = 3;

let db: TestDatabase;
let claimer: Claimer;
let pool: pg.Pool;

beforeAll(async () => {
  db = await createTestDatabase();
  claimer = await Claimer.start(db.url, config);
  pool = createTestPool(db.url, 'test-orphans');
});

afterAll(async () => {
  await pool?.end();
  await claimer?.stop();
  await db?.drop();
});

async function row(eventId: string) {
  const { rows } = await db.pool.query(
    `SELECT status, attempts, dispatch_job::text AS dispatch_job, last_error FROM hookgate.inbox WHERE endpoint = 'orph' AND event_id = $1`,
    [eventId],
  );
  return rows[0] as {
    status: string;
    attempts: number;
    dispatch_job: string | null;
    last_error: string | null;
  };
}

async function jobState(id: string | null): Promise<string | undefined> {
  const { rows } = await db.pool.query(`SELECT state::text FROM pgboss.job WHERE name = $1 AND id = $2`, [
    applyQueue('orph'),
    id,
  ]);
  return rows[0]?.state;
}

async function sweep(grace: { graceSeconds: number; now?: Date } = { graceSeconds: 0 }) {
  const client = await pool.connect();
  try {
    await client.query('BEGIN');
    const result = await sweepOrphans(client, claimer.boss, 'orph', {
      maxAttempts: MAX_ATTEMPTS,
      ...grace,
    });
    await client.query('COMMIT');
    return result;
  } finally {
    client.release();
  }
}

describe('orphans', () => {
  it('sends a row whose job was deleted or finished again, leaves a live one alone, ends one out of attempts', async () => {
    await claimer.claim('orph', [
      { eventId: 'live' },
      { eventId: 'deleted' },
      { eventId: 'failed' },
      { eventId: 'spent' },
      { eventId: 'waiting' },
    ]);
    const claimed = await row('live');
    // One claim, one job for all five.
    expect((await row('deleted')).dispatch_job).toBe(claimed.dispatch_job);
    // Split them over jobs of their own, in the states the sweeper must tell apart.
    const own = async (eventId: string, state: string | null, retryCount = 0) => {
      const id = crypto.randomUUID();
      if (state !== null) {
        await db.pool.query(
          `INSERT INTO pgboss.job (id, name, data, state, retry_count, completed_on)
           VALUES ($1, $2, jsonb_build_object('endpoint', 'orph', 'eventIds', jsonb_build_array($3::text)), $4::pgboss.job_state, $5,
                   CASE WHEN $4 IN ('completed', 'failed') THEN now() END)`,
          [id, applyQueue('orph'), eventId, state, retryCount],
        );
      }
      await db.pool.query(
        `UPDATE hookgate.inbox SET dispatch_job = $2 WHERE endpoint = 'orph' AND event_id = $1`,
        [eventId, id],
      );
      return id;
    };
    await db.pool.query(`DELETE FROM pgboss.job WHERE id = $1`, [claimed.dispatch_job]);
    const live = await own('live', 'created');
    await own('deleted', null);
    // pg-boss tried this one's batch twice (both transactions failed) and gave up.
    await own('failed', 'failed', 1);
    await own('spent', 'completed');
    await db.pool.query(
      `UPDATE hookgate.inbox SET attempts = 3, last_error = 'entity_not_yet_known: no parent' WHERE endpoint = 'orph' AND event_id = 'spent'`,
    );
    const waiting = await own('waiting', 'retry');

    const result = await sweep();
    expect(result.redispatched.sort()).toEqual(['deleted', 'failed']);
    expect(result.ended.map((e) => [e.eventId, e.status])).toEqual([['spent', 'parked']]);
    // Live jobs keep their rows.
    expect((await row('live')).dispatch_job).toBe(live);
    expect((await row('waiting')).dispatch_job).toBe(waiting);
    // The others have a new job that names them, waiting to run.
    for (const eventId of ['deleted', 'failed']) {
      const now = await row(eventId);
      expect(now.status).toBe('pending');
      expect(await jobState(now.dispatch_job)).toBe('created');
    }
    // The attempts pg-boss counted for the failed job are carried over.
    const { rows } = await db.pool.query(
      `SELECT dispatched_attempts FROM hookgate.inbox WHERE endpoint = 'orph' AND event_id = 'failed'`,
    );
    expect(rows[0].dispatched_attempts).toBe(2);
    expect(await row('spent')).toMatchObject({ status: 'parked', attempts: 3 });

    // Nothing left to do the second time.
    const again = await sweep();
    expect(again.redispatched).toEqual([]);
    expect(again.ended).toEqual([]);
  });

  it('leaves a row alone for the grace after its receipt or its last dispatch, and sends it once the grace has passed', async () => {
    await claimer.claim('orph', [{ eventId: 'young' }]);
    const { dispatch_job: job } = await row('young');
    await db.pool.query(`DELETE FROM pgboss.job WHERE name = $1 AND id = $2`, [applyQueue('orph'), job]);
    // An hour's grace on the database's clock: just received, it is left alone.
    expect((await sweep({ graceSeconds: 3_600 })).redispatched).toEqual([]);
    // The same sweep an hour and a minute later, on a clock the test moves rather than waits out.
    const later = new Date(Date.now() + 3_660_000);
    expect((await sweep({ graceSeconds: 3_600, now: later })).redispatched).toEqual(['young']);
    // Its new job is live: left alone.
    expect((await sweep({ graceSeconds: 3_600, now: later })).redispatched).toEqual([]);
  });
});
