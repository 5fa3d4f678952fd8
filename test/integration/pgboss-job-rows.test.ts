import { createHash, randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { PgBoss } from 'pg-boss';
// The insert statement pg-boss itself runs (not a public API: read here only to notice a change).
import { insertJobs } from 'pg-boss/dist/plans.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { INSERT_JOB_ROWS, PGBOSS_JOB_ROWS_VERSION } from '../../services/core/queue/job-rows.ts';
import { applyQueue } from '../../services/core/queue/names.ts';
import { DEFAULT_RETRY_POLICY, ensureQueues } from '../../services/core/queue/queues.ts';
import { startBoss } from '../support/apply.ts';
import { createTestDatabase, type TestDatabase } from '../support/database.ts';
import { REPO_ROOT } from '../support/worker-harness.ts';

// The claim writes pg-boss's job rows with its own SQL (services/core/queue/job-rows.ts), a copy
// of what pg-boss 12.38.0's insert does for jobs with an id and data. These tests fail loudly if
// anything that copy relies on changes: the pinned version, pg-boss's own insert statement, the
// job table's columns and defaults, or the rows pg-boss writes for hookgate's queues.

let db: TestDatabase;
let boss: PgBoss;

const ENDPOINT = 'rows';
const QUEUE = applyQueue(ENDPOINT);

beforeAll(async () => {
  db = await createTestDatabase();
  boss = await startBoss(db.url);
  await ensureQueues(boss, [ENDPOINT], DEFAULT_RETRY_POLICY);
});

afterAll(async () => {
  await boss?.stop({ graceful: false, close: true });
  await db?.drop();
});

/** Our statement alone, for jobs of one queue. */
async function insertOurs(queue: string, jobs: readonly { id: string; data: unknown }[]): Promise<string[]> {
  const result = await db.pool.query<{ id: string }>(
    `WITH new_jobs AS (
       SELECT $1::text AS queue, j.id AS job_id, j.data, j.ord
         FROM unnest($2::uuid[], $3::jsonb[]) WITH ORDINALITY AS j(id, data, ord)
     ), jobs AS (${INSERT_JOB_ROWS})
     SELECT id::text FROM jobs`,
    [queue, jobs.map((j) => j.id), jobs.map((j) => JSON.stringify(j.data))],
  );
  return result.rows.map((r) => r.id);
}

async function jobRow(id: string): Promise<Record<string, unknown>> {
  const { rows } = await db.pool.query(
    `SELECT *, extract(epoch FROM keep_until - start_after)::float8 AS kept_for,
            extract(epoch FROM start_after - created_on)::float8 AS starts_after
       FROM pgboss.job WHERE id = $1`,
    [id],
  );
  expect(rows, `job ${id}`).toHaveLength(1);
  return rows[0];
}

describe("pg-boss's job table, as the one-statement claim writes it", () => {
  it('is pinned to the pg-boss version in package-lock.json (and installed)', () => {
    const lock = JSON.parse(readFileSync(join(REPO_ROOT, 'package-lock.json'), 'utf8'));
    const installed = JSON.parse(readFileSync(join(REPO_ROOT, 'node_modules/pg-boss/package.json'), 'utf8'));
    expect(lock.packages['node_modules/pg-boss'].version).toBe(PGBOSS_JOB_ROWS_VERSION);
    expect(installed.version).toBe(PGBOSS_JOB_ROWS_VERSION);
  });

  it("pg-boss's own insert statement is the one job-rows.ts was copied from", () => {
    // If this fails, pg-boss changed how it inserts jobs: compare its insertJobs() with
    // INSERT_JOB_ROWS, adapt, then record the new digest.
    const sql = insertJobs('pgboss', { table: 'job', name: 'q', returnId: true });
    const digest = createHash('sha256').update(sql).digest('hex');
    expect(digest).toBe('e3036f35bab63bd585fec6e729bcfaf08ccda5d4028eac97176a1ac53f8df1f8');
  });

  it('has the columns, types, defaults and nullability job-rows.ts was written against', async () => {
    const { rows } = await db.pool.query<{
      column_name: string;
      type: string;
      column_default: string | null;
      is_nullable: string;
    }>(
      `SELECT column_name, udt_name AS type, column_default, is_nullable
         FROM information_schema.columns
        WHERE table_schema = 'pgboss' AND table_name = 'job'
        ORDER BY ordinal_position`,
    );
    const columns = rows.map((r) =>
      `${r.column_name} ${r.type} ${r.is_nullable === 'YES' ? 'null' : 'not null'} ${r.column_default ?? ''}`.trim(),
    );
    expect(columns).toEqual(JOB_COLUMNS);
    const queue = await db.pool.query<{ column_name: string }>(
      `SELECT column_name FROM information_schema.columns WHERE table_schema = 'pgboss' AND table_name = 'queue'`,
    );
    expect(queue.rows.map((r) => r.column_name)).toEqual(
      expect.arrayContaining([
        'name',
        'policy',
        'retry_limit',
        'retry_delay',
        'retry_backoff',
        'retry_delay_max',
        'expire_seconds',
        'retention_seconds',
        'deletion_seconds',
        'dead_letter',
        'heartbeat_seconds',
      ]),
    );
  });

  it("writes, for hookgate's apply queue, the row pg-boss's own insert writes", async () => {
    const theirs = randomUUID();
    const ours = randomUUID();
    expect(
      await boss.insert(QUEUE, [{ id: theirs, data: { endpoint: ENDPOINT, eventId: 'theirs' } }], {
        returnId: true,
      }),
    ).toEqual([theirs]);
    expect(await insertOurs(QUEUE, [{ id: ours, data: { endpoint: ENDPOINT, eventId: 'ours' } }])).toEqual([
      ours,
    ]);
    const differing = ['id', 'data', 'created_on', 'start_after', 'keep_until'];
    const a = await jobRow(theirs);
    const b = await jobRow(ours);
    for (const key of differing) {
      delete a[key];
      delete b[key];
    }
    expect(b).toEqual(a);
    // The premise: the queue's own settings (not pg-boss's defaults) reached the row.
    expect(b).toMatchObject({
      state: 'created',
      retry_limit: DEFAULT_RETRY_POLICY.retryLimit,
      expire_seconds: DEFAULT_RETRY_POLICY.expireInSeconds,
    });
    // Apply queues have no dead-letter queue: an event's end is written on its inbox row.
    expect(b.dead_letter).toBeNull();
  });

  it("writes, through the baseline's insert_apply_jobs (requeue and quarantine release), the row pg-boss writes", async () => {
    const theirs = randomUUID();
    const ours = randomUUID();
    await boss.insert(QUEUE, [{ id: theirs, data: { endpoint: ENDPOINT, eventIds: ['a'] } }]);
    await db.pool.query(`SELECT hookgate.insert_apply_jobs($1, ARRAY[$2::uuid], ARRAY['["b"]'::jsonb])`, [
      ENDPOINT,
      ours,
    ]);
    const a = await jobRow(theirs);
    const b = await jobRow(ours);
    expect(b.data).toEqual({ endpoint: ENDPOINT, eventIds: ['b'] });
    for (const key of ['id', 'data', 'created_on', 'start_after', 'keep_until']) {
      delete a[key];
      delete b[key];
    }
    expect(b).toEqual(a);
    // Only a queue that exists, by the endpoint's apply queue's name.
    await expect(
      db.pool.query(
        `SELECT hookgate.insert_apply_jobs('nowhere', ARRAY[gen_random_uuid()], ARRAY['[]'::jsonb])`,
      ),
    ).rejects.toMatchObject({ code: 'P0002' });
  });

  it('skips an id already held, returning nothing for it (what the claim detects and falls back on)', async () => {
    const id = randomUUID();
    expect(await insertOurs(QUEUE, [{ id, data: { endpoint: ENDPOINT, eventId: 'held' } }])).toEqual([id]);
    expect(await insertOurs(QUEUE, [{ id, data: { endpoint: ENDPOINT, eventId: 'held' } }])).toEqual([]);
    // pg-boss behaves the same way for its own insert.
    expect((await boss.insert(QUEUE, [{ id, data: {} }], { returnId: true })) ?? []).toEqual([]);
  });

  it('a job written this way is fetched, completed and failed by pg-boss like its own', async () => {
    const id = randomUUID();
    await insertOurs(QUEUE, [{ id, data: { endpoint: ENDPOINT, eventId: 'lifecycle' } }]);
    const fetched = await boss.fetch<{ eventId: string }>(QUEUE, { batchSize: 10 });
    const job = fetched.find((j) => j.id === id);
    expect(job?.data.eventId).toBe('lifecycle');
    await boss.fail(QUEUE, [{ id, retryCount: job!.retryCount }], { code: 'x', message: 'y' });
    expect((await boss.getJobById(QUEUE, id))?.state).toBe('retry');
  });
});

/** pgboss.job of pg-boss 12.38.0: name, type, nullability, default. */
const JOB_COLUMNS = [
  'id uuid not null gen_random_uuid()',
  'name text not null',
  'priority int4 not null 0',
  'data jsonb null',
  "state job_state not null 'created'::pgboss.job_state",
  'retry_limit int4 not null 2',
  'retry_count int4 not null 0',
  'retry_delay int4 not null 0',
  'retry_backoff bool not null false',
  'retry_delay_max int4 null',
  'expire_seconds int4 not null 900',
  'deletion_seconds int4 not null 604800',
  'singleton_key text null',
  'singleton_on timestamp null',
  'group_id text null',
  'group_tier text null',
  'start_after timestamptz not null now()',
  'created_on timestamptz not null now()',
  'started_on timestamptz null',
  'completed_on timestamptz null',
  "keep_until timestamptz not null (now() + '336:00:00'::interval)",
  'output jsonb null',
  'dead_letter text null',
  'policy text null',
  'heartbeat_on timestamptz null',
  'heartbeat_seconds int4 null',
  'blocked bool not null false',
  'blocking bool not null false',
  'pending_dependencies int4 not null 0',
  'source_name text null',
  'source_id uuid null',
  'source_created_on timestamptz null',
  'source_retry_count int4 null',
  'source_output jsonb null',
  'source_root_id uuid null',
  'trace_context jsonb null',
  'upsert_by_key bool null',
];
