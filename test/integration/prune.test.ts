import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEFAULT_DEDUPE_HORIZON_MS } from '../../services/core/config/dedupe-schema.ts';
import type { PruneProgress } from '../../services/core/db/batched-delete.ts';
import {
  insertDeliveries,
  PRUNE_DELIVERIES_BATCH,
  pruneDestinationDeliveries,
} from '../../services/core/destinations/deliveries.ts';
import { PRUNE_INBOX_ROWS_BATCH } from '../../services/core/inbox/partitions.ts';
import { pruneInbox } from '../../services/core/inbox/prune.ts';
import { prune } from '../../services/core/retention/prune.ts';
import { createTestDatabase, type TestDatabase } from '../support/database.ts';

let db: TestDatabase;

beforeAll(async () => {
  db = await createTestDatabase();
});

afterAll(async () => {
  await db?.drop();
});

const DAY = 86_400_000;

/** Destination delivery rows (pending) for these event ids, to settle as a test needs. */
async function deliveries(eventIds: readonly string[]): Promise<void> {
  await insertDeliveries(
    db.pool,
    'ep',
    eventIds.map((eventId) => ({
      destination: 'd',
      eventId,
      eventType: 't',
      webhookId: `msg_${eventId}`,
      entityKey: null,
      entityVersion: null,
    })),
  );
}

async function row(eventId: string, status: string, ageDays: number): Promise<void> {
  await db.pool.query(
    `INSERT INTO hookgate.inbox (endpoint, event_id, provider, event_type, payload, status, received_at)
     VALUES ('ep', $1, 'stripe', 't', '{}', $2, now() - make_interval(days => $3))`,
    [eventId, status, ageDays],
  );
}

describe('prune', () => {
  it('deletes only settled rows older than the window, in chunks, and never unsettled ones', async () => {
    for (const status of ['processed', 'ignored', 'stale', 'pending', 'parked', 'dead']) {
      await row(`old_${status}`, status, 40);
      await row(`new_${status}`, status, 1);
    }
    for (let i = 0; i < 5; i += 1) await row(`old_extra_${i}`, 'processed', 50);
    await deliveries(['old', 'recent', 'stuck']);
    await db.pool.query(
      `UPDATE hookgate.destination_deliveries
          SET status = CASE event_id WHEN 'stuck' THEN 'dead' ELSE 'delivered' END,
              settled_at = now() - CASE event_id WHEN 'recent' THEN interval '10 days' ELSE interval '100 days' END`,
    );
    // The attempt history goes with the inbox window (three old rows, in two chunks of 2).
    await db.pool.query(
      `INSERT INTO hookgate.apply_attempts (endpoint, event_id, attempt, at, worker, outcome, duration_ms)
       VALUES ('ep', 'old_processed', 1, now() - interval '40 days', 'w', 'processed', 1),
              ('ep', 'old_dead', 1, now() - interval '40 days', 'w', 'failed', 1),
              ('ep', 'old_dead', 2, now() - interval '39 days', 'w', 'dead', 1),
              ('ep', 'new_processed', 1, now() - interval '1 day', 'w', 'processed', 1)`,
    );
    // The audit trail has its own window: one action older than it, one within.
    await db.pool.query(
      `INSERT INTO hookgate.audit (at, actor, command, count, dry_run)
       VALUES (now() - interval '400 days', 'old', 'requeue', 1, false), (now() - interval '10 days', 'recent', 'requeue', 1, false)`,
    );
    const report = await prune(db.pool, {
      actor: 'test',
      auditOlderThanMs: 365 * DAY,
      inboxOlderThanMs: 30 * DAY,
      dedupe: { now: new Date(), horizonMs: DEFAULT_DEDUPE_HORIZON_MS },
      deliveriesOlderThanMs: 90 * DAY,
      chunk: 2,
    });
    expect(report).toEqual({
      // The keys of the deleted rows received before the dedupe horizon (35 days) go too.
      inboxKeys: 8,
      inboxRowsInPartitions: 0,
      inboxPartitions: 0,
      inboxPartitionsLeft: [],
      inboxRows: 8,
      destinationDeliveries: 1,
      attempts: 3,
      audit: 1,
      quarantine: 0,
    });
    const actors = await db.pool.query('SELECT actor FROM hookgate.audit ORDER BY id');
    // The old action went; the recent one stayed, and this prune recorded itself.
    expect(actors.rows.map((r) => r.actor)).toEqual(['recent', 'test']);
    const attempts = await db.pool.query('SELECT event_id FROM hookgate.apply_attempts');
    expect(attempts.rows.map((r) => r.event_id)).toEqual(['new_processed']);
    const left = await db.pool.query('SELECT event_id FROM hookgate.inbox ORDER BY event_id');
    expect(left.rows.map((r) => r.event_id)).toEqual([
      'new_dead',
      'new_ignored',
      'new_parked',
      'new_pending',
      'new_processed',
      'new_stale',
      'old_dead',
      'old_parked',
      'old_pending',
    ]);
    const kept = await db.pool.query(
      'SELECT event_id FROM hookgate.destination_deliveries ORDER BY event_id',
    );
    expect(kept.rows.map((r) => r.event_id)).toEqual(['recent', 'stuck']);
  });
});

describe('prune in bounded batches', () => {
  it('walks the inbox oldest first in batches of batchSize, reporting each batch, ties included', async () => {
    await db.pool.query('DELETE FROM hookgate.inbox');
    // Seven settled rows share one timestamp: a batch boundary falls among them.
    await db.pool.query(
      `INSERT INTO hookgate.inbox (endpoint, event_id, provider, event_type, payload, status, received_at)
       SELECT 'ep', 'tie_' || g, 'stripe', 't', '{}', 'processed', timestamptz '2020-01-01 00:00:00+00'
         FROM generate_series(1, 7) AS g`,
    );
    await row('old_pending_b', 'pending', 40);
    await row('old_dead_b', 'dead', 40);
    await row('old_ignored_b', 'ignored', 35);
    await row('new_processed_b', 'processed', 1);
    const batches: PruneProgress[] = [];
    const counts = await pruneInbox(db.pool, {
      olderThan: 30 * DAY,
      dedupe: { now: new Date(), horizonMs: DEFAULT_DEDUPE_HORIZON_MS },
      batchSize: 3,
      onBatch: (progress) => {
        batches.push(progress);
      },
    });
    expect(counts).toMatchObject({ rows: 8, batches: 3, dryRun: false, partitions: [] });
    expect(batches).toEqual([
      { table: 'inbox', deleted: 3, total: 3 },
      { table: 'inbox', deleted: 3, total: 6 },
      { table: 'inbox', deleted: 2, total: 8 },
    ]);
    const left = await db.pool.query('SELECT event_id FROM hookgate.inbox ORDER BY event_id');
    expect(left.rows.map((r) => r.event_id)).toEqual(['new_processed_b', 'old_dead_b', 'old_pending_b']);
  });

  it('a dry run counts what would go and deletes nothing', async () => {
    await db.pool.query('DELETE FROM hookgate.inbox');
    for (let i = 0; i < 4; i += 1) await row(`dry_${i}`, 'processed', 40);
    await row('dry_parked', 'parked', 40);
    const seen: PruneProgress[] = [];
    const counts = await pruneInbox(db.pool, {
      olderThan: 30 * DAY,
      dedupe: { now: new Date(), horizonMs: DEFAULT_DEDUPE_HORIZON_MS },
      batchSize: 2,
      dryRun: true,
      onBatch: (p) => {
        seen.push(p);
      },
    });
    expect(counts).toMatchObject({ rows: 4, batches: 0, dryRun: true });
    expect(seen).toEqual([{ table: 'inbox', deleted: 4, total: 4 }]);
    const left = await db.pool.query<{ n: number }>('SELECT count(*)::int AS n FROM hookgate.inbox');
    expect(left.rows[0]!.n).toBe(5);
  });

  it('stops after the batch in flight when aborted, and pauses between batches', async () => {
    await db.pool.query('DELETE FROM hookgate.inbox');
    for (let i = 0; i < 10; i += 1) await row(`stop_${i}`, 'processed', 40 + i);
    const stop = new AbortController();
    const started = performance.now();
    const counts = await pruneInbox(db.pool, {
      olderThan: 30 * DAY,
      dedupe: { now: new Date(), horizonMs: DEFAULT_DEDUPE_HORIZON_MS },
      batchSize: 2,
      pauseMs: 150,
      signal: stop.signal,
      onBatch: ({ total }) => {
        if (total >= 4) stop.abort();
      },
    });
    expect(counts).toMatchObject({ rows: 4, batches: 2, dryRun: false });
    // One pause, between the two batches.
    expect(performance.now() - started).toBeGreaterThanOrEqual(150);
    const left = await db.pool.query<{ n: number }>('SELECT count(*)::int AS n FROM hookgate.inbox');
    expect(left.rows[0]!.n).toBe(6);
  });

  it('walks destination deliveries the same way: delivered ones only', async () => {
    await db.pool.query('DELETE FROM hookgate.destination_deliveries');
    await deliveries(['old_1', 'old_2', 'old_3', 'old_4', 'old_5', 'dead', 'recent']);
    await db.pool.query(
      `UPDATE hookgate.destination_deliveries
          SET status = CASE event_id WHEN 'dead' THEN 'dead' ELSE 'delivered' END,
              settled_at = CASE event_id WHEN 'recent' THEN now() - interval '1 day'
                                ELSE now() - interval '100 days' + id * interval '1 second' END`,
    );
    const batches: number[] = [];
    const counts = await pruneDestinationDeliveries(db.pool, {
      olderThan: 90 * DAY,
      batchSize: 2,
      onBatch: (p) => {
        batches.push(p.deleted);
      },
    });
    expect(counts).toMatchObject({ rows: 5, batches: 3 });
    expect(batches).toEqual([2, 2, 1]);
    const left = await db.pool.query(
      'SELECT event_id FROM hookgate.destination_deliveries ORDER BY event_id',
    );
    expect(left.rows.map((r) => r.event_id)).toEqual(['dead', 'recent']);
  });
});

/** The plan of a statement for the given parameters, as text. */
async function plan(sql: string, params: unknown[]): Promise<string> {
  const { rows } = await db.pool.query(`EXPLAIN ${sql}`, params);
  return rows.map((r: { 'QUERY PLAN': string }) => r['QUERY PLAN']).join('\n');
}

describe('each prune batch reads an index from its cursor, never the whole table', () => {
  beforeAll(async () => {
    await db.pool.query('DELETE FROM hookgate.inbox');
    await db.pool.query('DELETE FROM hookgate.destination_deliveries');
    // Enough rows that a sequential scan would be the planner's choice if no index served.
    await db.pool.query(
      `INSERT INTO hookgate.inbox (endpoint, event_id, provider, event_type, payload, status, received_at)
       SELECT 'ep', 'plan_' || g, 'stripe', 't', '{}', 'processed', now() - g * interval '1 minute'
         FROM generate_series(1, 50000) AS g`,
    );
    await db.pool.query(
      `INSERT INTO hookgate.destination_deliveries (endpoint, destination, event_id, event_type, webhook_id, status, settled_at)
       SELECT 'ep', 'd', 'plan_' || g, 't', 'msg_plan_' || g, 'delivered', now() - g * interval '1 minute'
         FROM generate_series(1, 50000) AS g`,
    );
    await db.pool.query('ANALYZE hookgate.inbox, hookgate.destination_deliveries');
  });

  it('inbox: rows no dated partition holds, by their received_at index, deleted by key', async () => {
    const text = await plan(PRUNE_INBOX_ROWS_BATCH, ['-infinity', new Date(Date.now() - 30 * DAY), 5000]);
    // Rows before the first partition live in the default partition.
    expect(text).toMatch(/Index Scan using inbox_default_received_at_idx on inbox_default/);
    expect(text).not.toMatch(/Seq Scan on inbox_default/);
  });

  it('destination deliveries: destination_deliveries_settled_idx, rows deleted by id', async () => {
    const text = await plan(PRUNE_DELIVERIES_BATCH, ['-infinity', new Date(Date.now() - 30 * DAY), 5000]);
    expect(text).toMatch(
      /Index (Only )?Scan using destination_deliveries_settled_idx on destination_deliveries/,
    );
    expect(text).not.toMatch(/Seq Scan/);
  });
});
