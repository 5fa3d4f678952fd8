import type pg from 'pg';

/**
 * pg-boss job rows written with hookgate's own SQL, so that the claim can store its inbox rows,
 * their apply jobs and the workers' wake-up in one statement (one round trip; see
 * inbox/claim-sql.ts). Everything else about jobs (fetch, complete, fail, retries of tries that
 * never report, expiry, deletion) stays pg-boss's.
 *
 * This is the one place that writes pg-boss's job rows. It mirrors `insertJobs()` of the pg-boss
 * version below (dist/plans.js) for jobs that carry only an id and data: every other column is
 * what pg-boss itself would write (the queue's settings, else pg-boss's defaults). The contract
 * test (test/integration/pgboss-job-rows.test.ts) pins this version against package-lock.json,
 * the job table's columns and defaults, and the rows pg-boss's own `insert` writes; it fails
 * loudly when any of them changes, and this file must then be checked against the new pg-boss.
 */
export const PGBOSS_JOB_ROWS_VERSION = '12.38.0';

/** pg-boss 12.38.0's QUEUE_DEFAULTS, used when a queue row leaves a setting null. */
const DEFAULTS = {
  expireSeconds: 15 * 60,
  retentionSeconds: 14 * 24 * 60 * 60,
  deletionSeconds: 7 * 24 * 60 * 60,
  retryLimit: 2,
  retryDelay: 0,
  retryBackoff: false,
} as const;

/**
 * Inserts one job per row of a relation named `new_jobs(queue text, job_id uuid, data jsonb,
 * ord bigint)`, in `ord` order (the caller's, as pg-boss inserts its array's), to be used as a data-modifying CTE (`jobs AS (…)`);
 * returns the ids it created. Like pg-boss, ON CONFLICT DO NOTHING: an id (or a queue policy's
 * unique key) already held skips the row, which the caller must detect from the returned ids.
 */
export const INSERT_JOB_ROWS = `
  INSERT INTO pgboss.job (
    id, name, data, priority, start_after, created_on, singleton_key, singleton_on, group_id, group_tier,
    expire_seconds, deletion_seconds, keep_until, retry_limit, retry_delay, retry_backoff, retry_delay_max,
    policy, dead_letter, heartbeat_seconds, blocked, blocking, pending_dependencies, trace_context
  )
  SELECT n.job_id, n.queue, n.data, 0, pgboss.job_now(), pgboss.job_now(), NULL, NULL, NULL, NULL,
         COALESCE(q.expire_seconds, ${DEFAULTS.expireSeconds}),
         COALESCE(q.deletion_seconds, ${DEFAULTS.deletionSeconds}),
         pgboss.job_now() + COALESCE(q.retention_seconds, ${DEFAULTS.retentionSeconds}) * interval '1s',
         COALESCE(q.retry_limit, ${DEFAULTS.retryLimit}),
         COALESCE(q.retry_delay, ${DEFAULTS.retryDelay}),
         COALESCE(q.retry_backoff, ${DEFAULTS.retryBackoff}),
         q.retry_delay_max,
         q.policy, q.dead_letter, q.heartbeat_seconds, false, false, 0, NULL
    FROM new_jobs n
    LEFT JOIN pgboss.queue q ON q.name = n.queue
   ORDER BY n.ord
  ON CONFLICT DO NOTHING
  RETURNING id`;

/**
 * An event's current apply job (the one its row names), while pg-boss keeps it: when it was
 * dispatched (at receipt, after a failed attempt, by the last requeue), when its latest try
 * started, when it is due and when it finished. A primary-key lookup.
 */
export const APPLY_JOB_TIMES = `
  SELECT state::text AS state, retry_count, created_on, started_on, completed_on, start_after
    FROM pgboss.job
   WHERE name = $1 AND id = $2`;

export interface ApplyJobTimes {
  state: string;
  retry_count: number;
  created_on: Date;
  started_on: Date | null;
  completed_on: Date | null;
  start_after: Date;
}

/** Job states in which a job will still run, or is running: the rows it carries are not orphans. */
export const LIVE_JOB_STATES: ReadonlySet<string> = new Set(['created', 'retry', 'active']);

const JOBS_BY_ID = `
  SELECT id::text AS id, state::text AS state, retry_count, output
    FROM pgboss.job
   WHERE name = $1 AND id = ANY ($2::uuid[])`;

export interface JobState {
  readonly id: string;
  readonly state: string;
  readonly retry_count: number;
  readonly output: unknown;
}

/** The jobs of one queue under these ids, by primary key (ids pg-boss no longer holds are absent). */
export async function jobsById(
  db: pg.Pool | pg.ClientBase,
  queue: string,
  ids: readonly string[],
): Promise<JobState[]> {
  return (await db.query<JobState>(JOBS_BY_ID, [queue, ids])).rows;
}

/**
 * The reconciliation runs of one endpoint that are waiting or running now (the queue is `stately`:
 * at most one of each per endpoint), through job_i3, whose predicate this repeats.
 */
const LIVE_RECONCILE_RUNS = `
  SELECT id::text AS id, state::text AS state
    FROM pgboss.job
   WHERE name = $1 AND state <= 'active' AND policy = 'stately' AND COALESCE(singleton_key, '') = $2`;

export interface LiveRun {
  readonly id: string;
  readonly state: string;
}

export async function liveReconcileRuns(db: Pick<pg.ClientBase, 'query'>, queue: string, endpoint: string) {
  return (await db.query<LiveRun>(LIVE_RECONCILE_RUNS, [queue, endpoint])).rows;
}
