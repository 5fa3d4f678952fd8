import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCliInProcess } from '../support/cli.ts';
import { createTestDatabase, type TestDatabase } from '../support/database.ts';
import { runHookgate } from '../support/process.ts';

// `hookgate prune`: a dry run counts and deletes nothing; a window under 3 days needs --force;
// pending, parked and dead rows are never deleted whatever their age.
let db: TestDatabase;

beforeAll(async () => {
  db = await createTestDatabase();
  await db.pool.query(
    `INSERT INTO hookgate.delivery_counts (endpoint, minute, shard, accepted, duplicate)
     VALUES ('ep', date_trunc('minute', now() - interval '40 days'), 0, 5, 1),
            ('ep', date_trunc('minute', now() - interval '2 days'), 0, 5, 1),
            ('ep', date_trunc('minute', now()), 0, 5, 1)`,
  );
  for (const status of ['processed', 'ignored', 'stale', 'pending', 'parked', 'dead']) {
    for (const [suffix, days] of [
      ['old', 40],
      ['two_days', 2],
      ['new', 0],
    ] as const) {
      await db.pool.query(
        `INSERT INTO hookgate.inbox (endpoint, event_id, provider, event_type, payload, status, received_at)
         VALUES ('ep', $1, 'stripe', 't', '{}', $2, now() - make_interval(days => $3))`,
        [`${status}_${suffix}`, status, days],
      );
    }
  }
});

afterAll(async () => {
  await db?.drop();
});

const env = () => ({ DATABASE_URL: db.url, LOG_LEVEL: 'warn' });
const jsonOf = (output: string) => JSON.parse(output.slice(output.indexOf('{')));
const ids = async () =>
  (
    await db.pool.query<{ event_id: string }>('SELECT event_id FROM hookgate.inbox ORDER BY event_id')
  ).rows.map((row) => row.event_id);

describe('hookgate prune', () => {
  it('--dry-run counts what would go and deletes nothing', async () => {
    const before = await ids();
    const run = await runHookgate(['prune', '--older-than', '30d', '--dry-run', '--json'], { env: env() });
    expect(run.code, run.output).toBe(0);
    expect(jsonOf(run.output)).toEqual({
      dry_run: true,
      inbox_rows: 3,
      dedupe_horizon: '35d',
      dedupe_safe_since: expect.stringMatching(/^\d{4}-/),
      destination_deliveries: 0,
      attempts: 0,
      audit: 0,
      quarantine: 0,
      delivery_count_rows: 1,
    });
    expect(await ids()).toEqual(before);
  });

  it('refuses a window under 3 days without --force (exit 2), and with it keeps every unsettled row', async () => {
    // The refusal's exit code and line, on the real program in this process.
    const refused = await runCliInProcess(['prune', '--older-than', '1d'], env());
    expect(refused.code).toBe(2);
    expect(refused.output).toMatch(/usage_invalid: --older-than is under 3d.*--force/);
    const forced = await runHookgate(['prune', '--older-than', '1d', '--force', '--batch', '100', '--json'], {
      env: env(),
    });
    expect(forced.code, forced.output).toBe(0);
    expect(jsonOf(forced.output)).toEqual({
      inbox_rows: 6,
      inbox_rows_in_partitions: 0,
      // Of the six, the three 40 days old are past the dedupe horizon (35 days): their keys go;
      // the two-day-old ones keep theirs.
      inbox_keys: 3,
      dedupe_horizon: '35d',
      dedupe_safe_since: expect.stringMatching(/^\d{4}-/),
      // Every row here is in the partition that holds now: no whole week is past the window.
      inbox_partitions: 0,
      inbox_partitions_left: [],
      destination_deliveries: 0,
      attempts: 0,
      audit: 0,
      quarantine: 0,
      delivery_count_rows: 2,
      batches: 7,
    });
    const countsLeft = await db.pool.query('SELECT count(*)::int AS n FROM hookgate.delivery_counts');
    expect(countsLeft.rows[0].n).toBe(1);
    expect(await ids()).toEqual(
      [
        'dead_new',
        'dead_old',
        'dead_two_days',
        'ignored_new',
        'parked_new',
        'parked_old',
        'parked_two_days',
        'pending_new',
        'pending_old',
        'pending_two_days',
        'processed_new',
        'stale_new',
      ].sort(),
    );
    const human = await runHookgate(['prune', '--older-than', '30d'], { env: env() });
    expect(human.output).toMatch(
      /Deleted 0 settled inbox row\(s\) \(0 with their partition\), 0 attempt history row\(s\), 0 delivered destination delivery\(ies\), 0 audit row\(s\), 0 released or dropped quarantine row\(s\), 0 per-minute delivery count row\(s\) and 0 deduplication key\(s\) older than the horizon in \d+ batch\(es\)\.\nDeduplication keys are kept 35d \(dedupe\.horizon\), whether or not their payloads are: replay and reconciliation windows starting after \S+ are safe; earlier ones are refused unless forced\./,
    );
  });

  it('--batch sets the rows per statement and --pause the wait between statements', async () => {
    await db.pool.query(
      `INSERT INTO hookgate.inbox (endpoint, event_id, provider, event_type, payload, status, received_at)
       SELECT 'paced', 'paced_' || n, 'stripe', 't', '{}', 'processed', now() - interval '40 days' - make_interval(secs => n)
         FROM generate_series(1, 450) AS n`,
    );
    const started = Date.now();
    const run = await runCliInProcess(
      ['prune', '--older-than', '30d', '--batch', '100', '--pause', '400', '--json'],
      env(),
    );
    const elapsed = Date.now() - started;
    expect(run.code, run.output).toBe(0);
    // 450 rows by 100: five inbox statements (the last one short), then one each for the
    // attempt history, the destinations' deliveries, the audit trail and the
    // counts; a pause between the full ones.
    expect(JSON.parse(run.stdout)).toEqual({
      inbox_rows: 450,
      inbox_rows_in_partitions: 0,
      inbox_keys: expect.any(Number),
      dedupe_horizon: '35d',
      dedupe_safe_since: expect.stringMatching(/^\d{4}-/),
      inbox_partitions: 0,
      inbox_partitions_left: [],
      destination_deliveries: 0,
      attempts: 0,
      audit: 0,
      quarantine: 0,
      delivery_count_rows: 0,
      batches: 11,
    });
    expect(elapsed).toBeGreaterThanOrEqual(4 * 400);
    const left = await db.pool.query(
      `SELECT count(*)::int AS n FROM hookgate.inbox WHERE endpoint = 'paced'`,
    );
    expect(left.rows[0].n).toBe(0);
  });
});
