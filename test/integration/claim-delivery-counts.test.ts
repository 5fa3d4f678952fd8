import type pg from 'pg';
import type { PgBoss } from 'pg-boss';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createPool } from '../../services/core/db/pool.ts';
import { type Claim, claimBatch } from '../../services/core/inbox/claim.ts';
import { COUNT_DELIVERIES } from '../../services/core/inbox/claim-sql.ts';
import { createBoss } from '../../services/core/queue/boss.ts';
import { ensureQueues } from '../../services/core/queue/queues.ts';
import { createTestDatabase, type TestDatabase } from '../support/database.ts';

// The duplicate rate's source: the claim counts what it answered, per endpoint and minute, in
// its own transaction, exactly (concurrent batches included), and a batch of duplicates stays
// cheap (its commit does not wait for the WAL flush).
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

const claim = (endpoint: string, eventId: string): Claim => ({
  endpoint,
  provider: 'stripe',
  event: { eventId, eventType: 't', entityType: null, entityId: null, entityVersion: null, headers: {} },
  body: '{}',
  traceparent: null,
});

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

  it('a batch of duplicates only asks for an asynchronous commit; a batch that stored events does not', async () => {
    const seen: unknown[][] = [];
    // The real pool and database; the wrapper only records the count statement's parameters.
    const recording = Object.create(pool) as pg.Pool;
    const wrapped = new WeakSet<object>();
    recording.connect = (async () => {
      const client = await pool.connect();
      // Pooled clients come back: wrap each once.
      if (wrapped.has(client)) return client;
      wrapped.add(client);
      const query = client.query.bind(client) as (...args: unknown[]) => Promise<unknown>;
      (client as unknown as { query: unknown }).query = (...args: unknown[]) => {
        if (args[0] === COUNT_DELIVERIES) seen.push(args[1] as unknown[]);
        return query(...args);
      };
      return client;
    }) as pg.Pool['connect'];
    await claimBatch(recording, boss, [claim('a', 'fresh_1'), claim('a', 'e1')]);
    await claimBatch(recording, boss, [claim('a', 'fresh_1'), claim('a', 'e1')]);
    expect(seen.map((params) => params[3])).toEqual([false, true]);

    // What the flag does, in a transaction of its own.
    const client = await db.pool.connect();
    try {
      await client.query('BEGIN');
      await client.query(COUNT_DELIVERIES, [['a'], [0], [1], true]);
      expect((await client.query(`SELECT current_setting('synchronous_commit') AS s`)).rows[0].s).toBe('off');
      await client.query('ROLLBACK');
      await client.query('BEGIN');
      await client.query(COUNT_DELIVERIES, [['a'], [1], [0], false]);
      expect((await client.query(`SELECT current_setting('synchronous_commit') AS s`)).rows[0].s).toBe('on');
      await client.query('ROLLBACK');
    } finally {
      client.release();
    }
  });
});
