import pg from 'pg';
import type { PgBoss } from 'pg-boss';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createPool } from '../../services/core/db/pool.ts';
import { type Claim, claimBatch } from '../../services/core/inbox/claim.ts';
import { createBoss } from '../../services/core/queue/boss.ts';
import { jobIdFor } from '../../services/core/queue/names.ts';
import { ensureQueues } from '../../services/core/queue/queues.ts';
import { plainClaim } from '../support/claims.ts';
import { createTestDatabase, type TestDatabase } from '../support/database.ts';

// The one-statement claim locks a batch's existing jobs first and inserts inbox rows second. A
// transactional claim (sync mode, a redelivery after prune, a batch with an unstorable payload)
// must take them in the same order, or two gateways claiming the same keys can deadlock.
let db: TestDatabase;
let pool: pg.Pool;
let boss: PgBoss;

beforeAll(async () => {
  db = await createTestDatabase();
  pool = createPool({
    connectionString: db.url,
    max: 2,
    statementTimeoutMs: 30_000,
    connectTimeoutMs: 5_000,
    applicationName: 'test-lock-order',
  });
  boss = createBoss({
    connectionString: db.url,
    max: 2,
    supervise: false,
    applicationName: 'test-lock-order',
  });
  boss.on('error', () => {});
  await boss.start();
  await ensureQueues(boss, ['lo']);
});

afterAll(async () => {
  await boss?.stop({ graceful: false, close: true });
  await pool?.end();
  await db?.drop();
});

const claim = (eventId: string): Claim =>
  plainClaim('lo', eventId, { provider: 'stripe', eventType: 't', body: '{}' });

describe('claim lock order', () => {
  it('a transactional claim locks existing jobs before it inserts any inbox row', async () => {
    // z was claimed, applied (job finished, kept) and pruned: its redelivery meets the old job.
    expect((await claimBatch(pool, boss, [claim('z')]))[0]).toEqual({ ok: true, outcome: 'accepted' });
    await db.pool.query(`UPDATE pgboss.job SET state = 'completed', completed_on = now() WHERE id = $1`, [
      jobIdFor('lo', 'z'),
    ]);
    await db.pool.query(`DELETE FROM hookgate.inbox WHERE endpoint = 'lo' AND event_id = 'z'`);

    // Another claim holds z's job, as the one-statement claim's `prior` step does.
    const holder = new pg.Client({ connectionString: db.url });
    await holder.connect();
    try {
      await holder.query('BEGIN');
      await holder.query('SELECT id FROM pgboss.job WHERE id = $1 FOR UPDATE', [jobIdFor('lo', 'z')]);
      // A hook sends the batch {x, z} through the transactional claim.
      const claimed = claimBatch(pool, boss, [claim('x'), claim('z')], { beforeCommit: async () => {} });
      for (let i = 0; ; i++) {
        const waiting = await db.pool.query(
          `SELECT count(*)::int AS n FROM pg_stat_activity
            WHERE application_name = 'test-lock-order' AND wait_event_type = 'Lock'`,
        );
        if (waiting.rows[0].n > 0) break;
        if (i > 200) throw new Error('the transactional claim never waited for the held job');
        await new Promise((r) => setTimeout(r, 25));
      }
      // While it waits, it must hold no inbox row: x can be inserted at once by anyone else
      // (were x's uncommitted row there, this insert would wait and hit the lock timeout).
      const other = await db.pool.connect();
      try {
        await other.query('BEGIN');
        await other.query(`SET LOCAL lock_timeout = '1s'`);
        await other.query(
          `INSERT INTO hookgate.inbox (endpoint, event_id, provider, event_type, payload, headers)
           VALUES ('lo', 'x', 'stripe', 't', '{}', '{}')`,
        );
        await other.query('ROLLBACK');
      } finally {
        other.release();
      }
      await holder.query('ROLLBACK');
      expect((await claimed).map((r) => r.ok && r.outcome)).toEqual(['accepted', 'accepted']);
    } finally {
      await holder.end();
    }
    const jobs = await db.pool.query(
      `SELECT state::text FROM pgboss.job WHERE id = ANY($1::uuid[]) ORDER BY 1`,
      [[jobIdFor('lo', 'x'), jobIdFor('lo', 'z')]],
    );
    expect(jobs.rows).toEqual([{ state: 'created' }, { state: 'created' }]);
  });
});
