import pg from 'pg';
import type { PgBoss } from 'pg-boss';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createPool } from '../../services/core/db/pool.ts';
import { type Claim, claimBatch, claimDocument } from '../../services/core/inbox/claim.ts';
import { CLAIM_IN_ONE_STATEMENT, COUNT_DELIVERIES } from '../../services/core/inbox/claim-sql.ts';
import { createBoss } from '../../services/core/queue/boss.ts';
import { ensureQueues } from '../../services/core/queue/queues.ts';
import { jobsNaming } from '../support/apply.ts';
import { plainClaim } from '../support/claims.ts';
import { createTestDatabase, type TestDatabase } from '../support/database.ts';

// The duplicate rate's source: the claim counts what it answered, per endpoint and minute, in
// the same statement or transaction, exactly (concurrent batches included), whichever way the
// claim goes (one statement, or the transactional claim when the one statement cannot decide).
let db: TestDatabase;
let pool: pg.Pool;
let boss: PgBoss;

beforeAll(async () => {
  db = await createTestDatabase();
  pool = createPool({
    connectionString: db.url,
    max: 6,
    statementTimeoutMs: 30_000,
    connectTimeoutMs: 5_000,
    applicationName: 'test-counts',
  });
  boss = createBoss({ connectionString: db.url, max: 2, supervise: false, applicationName: 'test-counts' });
  boss.on('error', () => {});
  await boss.start();
  await ensureQueues(boss, ['a', 'b']);
});

afterAll(async () => {
  await boss?.stop({ graceful: false, close: true });
  await pool?.end();
  await db?.drop();
});

const claim = (endpoint: string, eventId: string): Claim =>
  plainClaim(endpoint, eventId, { provider: 'stripe', eventType: 't', body: '{}' });

async function counts(endpoint: string) {
  const result = await db.pool.query(
    `SELECT coalesce(sum(accepted), 0)::int AS accepted, coalesce(sum(duplicate), 0)::int AS duplicate
       FROM hookgate.delivery_counts WHERE endpoint = $1`,
    [endpoint],
  );
  return result.rows[0];
}

describe('delivery counts', () => {
  it('counts accepted and duplicate answers per endpoint, a key twice in one batch included', async () => {
    const results = await claimBatch(pool, boss, [
      claim('a', 'e1'),
      claim('a', 'e2'),
      claim('a', 'e1'),
      claim('b', 'e1'),
    ]);
    expect(results.map((r) => r.ok && r.outcome)).toEqual(['accepted', 'accepted', 'duplicate', 'accepted']);
    await claimBatch(pool, boss, [claim('a', 'e2'), claim('b', 'e1'), claim('b', 'e1')]);
    expect(await counts('a')).toEqual({ accepted: 2, duplicate: 2 });
    expect(await counts('b')).toEqual({ accepted: 1, duplicate: 2 });
  });

  it('loses no increment under concurrent claim batches on several connections', async () => {
    // 6 batches at once, each 100 claims over 60 ids shared by all: every answer is counted once.
    const batches = Array.from({ length: 6 }, (_, b) =>
      Array.from({ length: 100 }, (_, i) => claim('b', `c${(i * 7 + b * 13) % 60}`)),
    );
    const before = await counts('b');
    const results = (await Promise.all(batches.map((batch) => claimBatch(pool, boss, batch)))).flat();
    expect(results.every((r) => r.ok)).toBe(true);
    const accepted = results.filter((r) => r.ok && r.outcome === 'accepted').length;
    expect(accepted).toBe(60);
    expect(await counts('b')).toEqual({
      accepted: before.accepted + 60,
      duplicate: before.duplicate + 600 - 60,
    });
  });

  it('a batch the one statement cannot store (a payload jsonb cannot hold) is counted once, by the transactional claim', async () => {
    // The one statement fails on r1's data and commits nothing (its counts included); the
    // transactional claim refuses r1 alone and counts its neighbour, a duplicate, once.
    const before = await counts('a');
    const unstorable = { ...claim('a', 'r1'), body: '{"note":"\\u0000"}' };
    const results = await claimBatch(pool, boss, [unstorable, claim('a', 'e1')]);
    expect(results[0]).toMatchObject({ ok: false, error: { code: 'payload_unstorable' } });
    expect(results[1]).toEqual({ ok: true, outcome: 'duplicate' });
    expect(await counts('a')).toEqual({ accepted: before.accepted, duplicate: before.duplicate + 1 });
  });

  it('when one delivery of a batch fails in the transactional claim, its neighbour keeps its answer and count', async () => {
    // r2 fails on a trigger, in the one statement (nothing commits) and then in the transactional
    // claim, where n2 is stored behind its own savepoint with its job and count: it must be
    // answered accepted, not refused (a refused delivery that is in fact stored would be re-sent and
    // counted again as a duplicate; a 4xx would tell the sender to give up on a stored event).
    await db.pool.query(`CREATE FUNCTION hookgate.refuse_r2() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN IF NEW.event_id = 'r2' THEN RAISE EXCEPTION 'refused for the test'; END IF; RETURN NEW; END $$`);
    await db.pool.query(
      'CREATE TRIGGER refuse_r2 AFTER INSERT ON hookgate.inbox FOR EACH ROW EXECUTE FUNCTION hookgate.refuse_r2()',
    );
    const before = await counts('a');
    try {
      const results = await claimBatch(pool, boss, [claim('a', 'n2'), claim('a', 'r2')]);
      expect(results[0]).toEqual({ ok: true, outcome: 'accepted' });
      expect(results[1]?.ok).toBe(false);
    } finally {
      await db.pool.query('DROP TRIGGER refuse_r2 ON hookgate.inbox');
    }
    const rows = await db.pool.query(
      `SELECT event_id FROM hookgate.inbox WHERE endpoint = 'a' AND event_id IN ('n2', 'r2') ORDER BY 1`,
    );
    expect(rows.rows).toEqual([{ event_id: 'n2' }]);
    expect(await jobsNaming(db.pool, ['n2'])).toBe(1);
    expect(await counts('a')).toEqual({ accepted: before.accepted + 1, duplicate: before.duplicate });
  });

  it('observe-mode duplicates take the transactional claim and are counted there', async () => {
    const observed = (eventId: string): Claim => ({ ...claim('b', eventId), dedupe: 'observe' });
    const before = await counts('b');
    await claimBatch(pool, boss, [observed('o1')]);
    await claimBatch(pool, boss, [observed('o1'), observed('o2')]);
    expect(await counts('b')).toEqual({ accepted: before.accepted + 2, duplicate: before.duplicate + 1 });
  });

  it('claims on two connections never wait for each other on a counts row', async () => {
    // Two connections whose backend pids are equal modulo 8 (the old shard count): they once
    // shared a row, so a claim waited for the other's COMMIT (and its WAL flush) to count.
    const opened: pg.Client[] = [];
    const byShard = new Map<number, pg.Client>();
    let pair: [pg.Client, pg.Client] | null = null;
    try {
      while (!pair && opened.length < 40) {
        const client = new pg.Client({ connectionString: db.url });
        await client.connect();
        opened.push(client);
        const pid = (await client.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0]!.pid;
        const other = byShard.get(pid % 8);
        if (other) pair = [other, client];
        else byShard.set(pid % 8, client);
      }
      expect(pair).not.toBeNull();
      const [holder, claimer] = pair!;
      await holder.query('BEGIN');
      await holder.query(COUNT_DELIVERIES, [['a'], [1], [0]]);
      await claimer.query(`SET lock_timeout = '1s'`);
      // The transactional claim's count, then the one-statement claim's, while the holder's
      // transaction is still open.
      await claimer.query(COUNT_DELIVERIES, [['a'], [1], [0]]);
      const claims = [claim('a', 'shard-1')];
      const result = await claimer.query(CLAIM_IN_ONE_STATEMENT, [
        claimDocument(claims),
        claims.length,
        true,
      ]);
      expect(result.rows.map((row) => row.event_id)).toEqual(['shard-1']);
      await holder.query('COMMIT');
    } finally {
      await Promise.all(opened.map((client) => client.end()));
    }
  });
});
