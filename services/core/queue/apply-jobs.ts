import type pg from 'pg';
import type { PgBoss } from 'pg-boss';
import { executorFor } from '../db/executor.ts';
import { HookgateError } from '../errors.ts';
import { type ApplyJobData, applyQueue, jobIdFor } from './names.ts';

/**
 * The jobs already holding some of these ids, locked. FOR UPDATE keeps a worker's fetch (which
 * skips locked jobs) from taking one of them until this transaction has committed its inbox row,
 * and waits for an apply transaction that is settling one of them right now.
 */
const LOCK_EXISTING_JOBS = `
  SELECT id::text AS id, state::text AS state
    FROM pgboss.job
   WHERE name = $1 AND id = ANY($2::uuid[])
   FOR UPDATE`;

/** States in which a job will still run (and so apply whatever inbox row it finds then). */
const WAITING = new Set(['created', 'retry']);
/** States in which a job will never run again: its id may be reused. */
const FINISHED = new Set(['completed', 'failed', 'cancelled']);

export interface SentApplyJobs {
  /**
   * Events whose previous job under the same id is running right now: that attempt may already
   * have looked for the inbox row and found none, so no job can be promised for them. The caller
   * must not keep their rows (the delivery is refused and retried later).
   */
  readonly busy: readonly string[];
}

/**
 * Guarantees a job that will run for each event, in the caller's transaction (one call per
 * endpoint). Job ids derive from (endpoint, event id) and pg-boss inserts with ON CONFLICT DO
 * NOTHING, so an id still held by an older job (pg-boss keeps finished jobs for a while; the
 * inbox row may have been pruned meanwhile) would make the insert a silent no-op and leave the
 * event with no job. So the insert returns the ids it created, and only when some are missing
 * (rare: a redelivery after prune, a requeue) does a second look lock the older jobs: one still
 * waiting to run is kept (it will apply the event), a finished one is deleted and inserted again,
 * a running one is reported busy. A job that still cannot be inserted is an error, never silence.
 */
export async function sendApplyJobs(
  boss: PgBoss,
  client: pg.ClientBase,
  endpoint: string,
  eventIds: readonly string[],
): Promise<SentApplyJobs> {
  if (eventIds.length === 0) return { busy: [] };
  const queue = applyQueue(endpoint);
  const db = executorFor(client);
  const insert = async (ids: readonly string[]): Promise<Set<string>> => {
    const jobs = ids.map((eventId) => ({
      id: jobIdFor(endpoint, eventId),
      data: { endpoint, eventId } satisfies ApplyJobData,
    }));
    const created = await boss.insert(queue, jobs, { db, returnId: true });
    return new Set(created ?? []);
  };
  const created = await insert(eventIds);
  if (created.size === eventIds.length) return { busy: [] };

  const missing = eventIds.filter((eventId) => !created.has(jobIdFor(endpoint, eventId)));
  const existing = await client.query<{ id: string; state: string }>(LOCK_EXISTING_JOBS, [
    queue,
    missing.map((eventId) => jobIdFor(endpoint, eventId)),
  ]);
  const stateOf = new Map(existing.rows.map((row) => [row.id, row.state]));
  const busy: string[] = [];
  const finished: string[] = [];
  const again: string[] = [];
  for (const eventId of missing) {
    const state = stateOf.get(jobIdFor(endpoint, eventId));
    if (state !== undefined && WAITING.has(state)) continue;
    if (state === 'active') busy.push(eventId);
    else {
      if (state !== undefined && FINISHED.has(state)) finished.push(eventId);
      // Finished, or gone since the first insert (pg-boss maintenance): insert again.
      again.push(eventId);
    }
  }
  if (finished.length > 0) {
    await boss.deleteJob(
      queue,
      finished.map((eventId) => jobIdFor(endpoint, eventId)),
      { db },
    );
  }
  if (again.length > 0) {
    const retried = await insert(again);
    const skipped = again.filter((eventId) => !retried.has(jobIdFor(endpoint, eventId)));
    if (skipped.length > 0) {
      throw new HookgateError(
        'job_insert_skipped',
        `pg-boss created no job for ${skipped.length} event(s) of ${endpoint} (first: ${skipped[0]}); nothing was accepted.`,
      );
    }
  }
  return { busy };
}

/** Apply jobs under these ids that will still run, or are running: created, retry, active. */
const LIVE_JOBS = `
  SELECT id::text AS id
    FROM pgboss.job
   WHERE name = $1 AND id = ANY($2::uuid[]) AND state IN ('created', 'retry', 'active')`;

/**
 * The events (of these) that have a live apply job. A dead letter is about one generation of an
 * event's job; once the event was dispatched again (`requeue`, `dedupe: observe`, a redelivery
 * after prune) under the same deterministic id, settling its row would drop that new dispatch.
 */
export async function eventsWithLiveJobs(
  client: pg.ClientBase,
  endpoint: string,
  eventIds: readonly string[],
): Promise<Set<string>> {
  if (eventIds.length === 0) return new Set();
  const byJob = new Map(eventIds.map((eventId) => [jobIdFor(endpoint, eventId), eventId]));
  const live = await client.query<{ id: string }>(LIVE_JOBS, [applyQueue(endpoint), [...byJob.keys()]]);
  return new Set(live.rows.map((row) => byJob.get(row.id)).filter((id): id is string => id !== undefined));
}

/** The jobs already holding any of these (queue, id) pairs, locked in id order. */
const LOCK_JOBS_IN_ORDER = `
  SELECT j.id
    FROM pgboss.job j
   WHERE (j.name, j.id) IN (SELECT * FROM unnest($1::text[], $2::uuid[]))
   ORDER BY j.id
     FOR UPDATE OF j`;

/**
 * Locks the existing jobs of these events before a transactional claim inserts their inbox rows.
 * The one-statement claim locks jobs first and rows second, both in a fixed order; a claim that
 * took rows first and jobs second (as sendApplyJobs does) could deadlock with it on shared keys.
 */
export async function lockApplyJobsFirst(
  client: pg.ClientBase,
  events: readonly { readonly endpoint: string; readonly eventId: string }[],
): Promise<void> {
  if (events.length === 0) return;
  await client.query(LOCK_JOBS_IN_ORDER, [
    events.map((e) => applyQueue(e.endpoint)),
    events.map((e) => jobIdFor(e.endpoint, e.eventId)),
  ]);
}
