import type pg from 'pg';
import type { PgBoss } from 'pg-boss';
import { jobsById, LIVE_JOB_STATES } from '../queue/job-rows.ts';
import { applyQueue } from '../queue/names.ts';
import { dispatchEvents } from './dispatch.ts';
import { failureFromOutput, lastErrorOf, PARKING_CODE } from './last-error.ts';
import { type Ended, settleBatch } from './rows.ts';

// Orphans: pending rows whose job is finished or gone (pg-boss ran out of tries for a batch whose
// transaction kept failing, retention deleted it, an operator's mistake). Nothing would ever apply them, so the sweeper (worker/sweeper.ts, and
// `hookgate requeue --orphans`) sends them again, or ends those that have no attempt left.

/**
 * One page of old pending rows, oldest first, through the pending rows' partial index. No locks:
 * the dispatch below re-checks each row (still pending, still carried by the job seen here).
 */
const OLD_PENDING_PAGE = `
  SELECT event_id, received_at, attempts, requeued_attempts, dispatched_attempts, last_error,
         dispatch_job::text AS dispatch_job
    FROM hookgate.inbox
   WHERE endpoint = $1 AND status = 'pending'
     AND received_at < coalesce($6::timestamptz, now()) - make_interval(secs => $2::float8)
     AND coalesce(next_attempt_at, received_at) < coalesce($6::timestamptz, now()) - make_interval(secs => $2::float8)
     AND received_at >= $3::timestamptz
     AND (received_at, event_id) > ($3::timestamptz, $4::text)
   ORDER BY received_at, event_id
   LIMIT $5`;

interface PendingRow {
  readonly event_id: string;
  readonly received_at: Date;
  readonly attempts: number;
  readonly requeued_attempts: number;
  readonly dispatched_attempts: number;
  readonly last_error: string | null;
  readonly dispatch_job: string | null;
}

export interface SweepPolicy {
  /** Attempts an event may make; an orphan that has made them all ends parked or dead. */
  readonly maxAttempts: number;
  /** Rows dispatched or received less than this long ago are left alone. */
  readonly graceSeconds: number;
  /** The sweep's clock (default: the database's now()); a test passes a later one instead of waiting. */
  readonly now?: Date;
  readonly pageSize?: number;
  /** Most pages per call (a backlog with live jobs is walked across calls: see `from`). */
  readonly maxPages?: number;
}

/** Where the walk stopped: the next call goes on from there (null: from the oldest row). */
export type SweepCursor = { readonly receivedAt: Date; readonly eventId: string } | null;

export interface SweepResult {
  readonly redispatched: string[];
  readonly ended: Ended[];
  /** Null once the walk reached the newest old row. */
  readonly cursor: SweepCursor;
}

const LOST =
  'dispatch_lost: the job carrying this event finished or was deleted while the event was still pending';
const WORKER_LOST =
  'worker_lost: the worker ended during each of its last attempts (killed, crashed, or stalled past worker.expireIn); the event may be what crashes it';

/**
 * Finds one endpoint's orphans in the caller's transaction and sends each again in a new job
 * (attempts carried over), or ends it when it has no attempt left.
 */
export async function sweepOrphans(
  client: pg.ClientBase,
  boss: PgBoss,
  endpoint: string,
  policy: SweepPolicy,
  from: SweepCursor = null,
): Promise<SweepResult> {
  const pageSize = policy.pageSize ?? 1_000;
  const maxPages = policy.maxPages ?? 10;
  const queue = applyQueue(endpoint);
  const redispatched: string[] = [];
  const ended: Ended[] = [];
  let cursor = from;
  for (let page = 0; page < maxPages; page += 1) {
    const { rows } = await client.query<PendingRow>(OLD_PENDING_PAGE, [
      endpoint,
      policy.graceSeconds,
      cursor?.receivedAt ?? new Date(0),
      cursor?.eventId ?? '',
      pageSize,
      policy.now ?? null,
    ]);
    if (rows.length === 0) return { redispatched, ended, cursor: null };
    const last = rows[rows.length - 1]!;
    cursor = { receivedAt: last.received_at, eventId: last.event_id };
    const ids = rows.map((row) => row.dispatch_job).filter((id): id is string => id !== null);
    const jobs = await jobsById(client, queue, [...new Set(ids)]);
    const byId = new Map(jobs.map((job) => [job.id, job]));
    const again: { eventId: string; attempts: number; fromJob: string | null }[] = [];
    const over: Ended[] = [];
    for (const row of rows) {
      const job = row.dispatch_job === null ? undefined : byId.get(row.dispatch_job);
      if (job && LIVE_JOB_STATES.has(job.state)) continue;
      // A job that ran out of tries counted them; the row may not have (a lost worker writes nothing).
      const attempts = Math.max(row.attempts, job ? row.dispatched_attempts + job.retry_count + 1 : 0);
      if (attempts < row.requeued_attempts + policy.maxAttempts) {
        again.push({ eventId: row.event_id, attempts, fromJob: row.dispatch_job });
        continue;
      }
      // How the job's last try ended decides, where it says: a failure it reported (a batch whose
      // transaction failed), or none (pg-boss expired it, or its heartbeat stopped: the worker died
      // with it, every time, and the event may be what kills it). Otherwise the row's last error.
      const reported = job?.state === 'failed' ? failureFromOutput(job.output) : null;
      const lost = job?.state === 'failed' && reported === null;
      const lastError = reported ? lastErrorOf(reported) : lost ? WORKER_LOST : (row.last_error ?? LOST);
      const code = /^([a-z0-9_]+): /.exec(lastError)?.[1];
      over.push({
        eventId: row.event_id,
        status: code === PARKING_CODE ? 'parked' : 'dead',
        attempts,
        lastError,
      });
    }
    redispatched.push(...(await dispatchEvents(boss, client, endpoint, again)));
    if (over.length > 0) {
      await settleBatch(client, endpoint, { applied: [], ended: over, failed: [] });
      ended.push(...over);
    }
    if (rows.length < pageSize) return { redispatched, ended, cursor: null };
  }
  return { redispatched, ended, cursor };
}
