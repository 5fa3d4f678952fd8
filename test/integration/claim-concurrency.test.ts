import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createPool } from '../../services/core/db/pool.ts';
import { type Claim, type ClaimResult, claimBatch } from '../../services/core/inbox/claim.ts';
import { createBoss } from '../../services/core/queue/boss.ts';
import { ensureQueues } from '../../services/core/queue/queues.ts';
import { jobsNaming } from '../support/apply.ts';
import { plainClaim } from '../support/claims.ts';
import { createTestDatabase, type TestDatabase } from '../support/database.ts';

// Two claim transactions racing for one key, driven directly so that the first one is
// provably still open while the second runs: what a duplicate sees of an uncommitted original.
let db: TestDatabase;
let pool: ReturnType<typeof createPool>;
let boss: ReturnType<typeof createBoss>;

beforeAll(async () => {
  db = await createTestDatabase();
  pool = createPool({
    connectionString: db.url,
    max: 4,
    statementTimeoutMs: 30_000,
    connectTimeoutMs: 5_000,
    applicationName: 'test-claims',
  });
  boss = createBoss({ connectionString: db.url, max: 2, supervise: false, applicationName: 'test-claims' });
  boss.on('error', () => {});
  await boss.start();
  await ensureQueues(boss, ['race']);
});

afterAll(async () => {
  await boss?.stop({ graceful: false, close: true });
  await pool?.end();
  await db?.drop();
});

const claim = (eventId: string): Claim =>
  plainClaim('race', eventId, { eventType: 't', body: '{"type":"t"}' });

/** Starts a claim that stops just before COMMIT until `finish` is called (commit or fail). */
function heldClaim(eventId: string) {
  let reached: () => void = () => {};
  const atCommit = new Promise<void>((resolve) => {
    reached = resolve;
  });
  let finish: (outcome: 'commit' | 'fail') => void = () => {};
  const decided = new Promise<'commit' | 'fail'>((resolve) => {
    finish = resolve;
  });
  const result = claimBatch(pool, boss, [claim(eventId)], {
    beforeCommit: async () => {
      reached();
      if ((await decided) === 'fail') throw new Error('the first claim fails at commit time');
    },
  });
  return { atCommit, finish, result };
}

async function waitersOnLock(): Promise<number> {
  const result = await db.pool.query(
    `SELECT count(*)::int AS n FROM pg_stat_activity
      WHERE datname = current_database() AND application_name = 'test-claims' AND wait_event_type = 'Lock'`,
  );
  return result.rows[0].n;
}

async function settle(result: Promise<ClaimResult[]>): Promise<string> {
  const [first] = await result;
  return first?.ok ? first.outcome : `error:${first?.error.code}`;
}

describe('a duplicate racing an uncommitted original', () => {
  it('waits for the original; once it commits, the duplicate is answered as a duplicate', async () => {
    const original = heldClaim('race_commit');
    await original.atCommit;
    const duplicate = claimBatch(pool, boss, [claim('race_commit')]);
    while ((await waitersOnLock()) === 0) await new Promise((resolve) => setTimeout(resolve, 20));
    original.finish('commit');
    expect(await settle(original.result)).toBe('accepted');
    expect(await settle(duplicate)).toBe('duplicate');
    const rows = await db.pool.query(
      `SELECT count(*)::int AS n FROM hookgate.inbox WHERE event_id = 'race_commit'`,
    );
    expect(rows.rows[0].n).toBe(1);
  });

  it('waits for the original; if it rolls back, the second claim stores the event itself', async () => {
    const original = heldClaim('race_rollback');
    await original.atCommit;
    const second = claimBatch(pool, boss, [claim('race_rollback')]);
    while ((await waitersOnLock()) === 0) await new Promise((resolve) => setTimeout(resolve, 20));
    original.finish('fail');
    expect(await settle(original.result)).toBe('error:database_unavailable');
    expect(await settle(second)).toBe('accepted');
    expect(await jobsNaming(db.pool, ['race_rollback'])).toBe(1);
  });
});
