// What prune reports, on PostgreSQL 18 and 15: its dry run, its run and its audit rows count the
// same settled inbox rows, those that go with a dropped week partition included (they once made
// the dry run say 7 and the run 0, and the audit row left them out).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEFAULT_DEDUPE_HORIZON_MS } from '../../services/core/config/dedupe-schema.ts';
import { listInboxPartitions } from '../../services/core/inbox/partitions.ts';
import { prune } from '../../services/core/retention/prune.ts';
import { createTestDatabase, type TestDatabase } from '../support/database.ts';

let db: TestDatabase;

beforeAll(async () => {
  db = await createTestDatabase();
});

afterAll(async () => {
  await db?.drop();
});

describe('prune counts the rows of the partitions it drops', () => {
  it('dry run, run and audit agree', async () => {
    const first = (await listInboxPartitions(db.pool)).find((p) => p.from_at !== null)!;
    // In the first week partition (ahead of now): 5 processed, 2 ignored, and a dead row it keeps.
    await db.pool.query(
      `INSERT INTO hookgate.inbox (endpoint, event_id, provider, event_type, payload, status, received_at)
       SELECT 'ep', 'week_' || g, 'stripe', 't', '{}', CASE WHEN g <= 5 THEN 'processed' WHEN g <= 7 THEN 'ignored' ELSE 'dead' END,
              $1::timestamptz + interval '1 hour'
         FROM generate_series(1, 8) g`,
      [first.from_at],
    );
    // Two settled rows no week partition holds, pruned one by one.
    await db.pool.query(
      `INSERT INTO hookgate.inbox (endpoint, event_id, provider, event_type, payload, status, received_at)
       VALUES ('ep', 'old_1', 'stripe', 't', '{}', 'processed', now() - interval '40 days'),
              ('ep', 'old_2', 'stripe', 't', '{}', 'stale', now() - interval '40 days')`,
    );
    // A window whose cutoff is a minute past that week's end (ahead of now: a negative age).
    const request = {
      actor: 'test',
      inboxOlderThanMs: -(first.to_at.getTime() + 60_000 - Date.now()),
      deliveriesOlderThanMs: 90 * 86_400_000,
      dedupe: { now: new Date(), horizonMs: DEFAULT_DEDUPE_HORIZON_MS },
      chunk: 100,
    };
    const dry = await prune(db.pool, { ...request, dryRun: true });
    expect(dry.inboxRows).toBe(9);
    const run = await prune(db.pool, request);
    expect(run.inboxRows).toBe(9);
    // The week's 7, and the two old rows too where the table the inbox was before its conversion
    // (which holds them) is past the cutoff as well; else they went one by one.
    expect(run.inboxRowsInPartitions).toBeGreaterThanOrEqual(7);
    expect(run.inboxPartitions).toBeGreaterThanOrEqual(1);
    expect((await listInboxPartitions(db.pool)).map((p) => p.name)).not.toContain(first.name);
    const left = await db.pool.query(`SELECT event_id, status FROM hookgate.inbox WHERE endpoint = 'ep'`);
    expect(left.rows).toEqual([{ event_id: 'week_8', status: 'dead' }]);
    const audit = await db.pool.query(
      `SELECT dry_run, count::int AS count, (filters->>'inbox_rows')::int AS inbox_rows,
              (filters->>'inbox_rows_in_partitions')::int AS in_partitions
         FROM hookgate.audit WHERE command = 'prune' ORDER BY id`,
    );
    expect(audit.rows).toEqual([
      { dry_run: true, count: 9, inbox_rows: 9, in_partitions: 0 },
      { dry_run: false, count: 9, inbox_rows: 9, in_partitions: run.inboxRowsInPartitions },
    ]);
  });
});
