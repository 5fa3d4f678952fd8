// `hookgate requeue`: parked, dead and orphaned events back to pending with a live job each.
import type pg from 'pg';
import type { PgBoss } from 'pg-boss';
import { withTransaction } from '../db/transaction.ts';
import { HookgateError } from '../errors.ts';
import { sendApplyJobs } from '../queue/apply-jobs.ts';
import { applyQueue, jobIdFor } from '../queue/names.ts';

/**
 * Moves parked/dead rows back to pending, remembering the attempts made so far (the next apply
 * counts on from them). Rows are locked, so a requeue cannot race a dead-letter settle.
 */
const REQUEUE_ROWS = `
  WITH picked AS (
    SELECT endpoint, event_id
      FROM hookgate.inbox
     WHERE endpoint = $1 AND status = ANY($2::text[]) AND ($3::text IS NULL OR event_id = $3)
     ORDER BY received_at, event_id
     LIMIT $4
     FOR UPDATE
  )
  UPDATE hookgate.inbox i
     SET status = 'pending', requeued_attempts = i.attempts, processed_at = NULL
    FROM picked
   WHERE i.endpoint = picked.endpoint AND i.event_id = picked.event_id
  RETURNING i.event_id`;

export interface RequeueRequest {
  readonly endpoint: string;
  readonly statuses: readonly ('parked' | 'dead')[];
  readonly eventId?: string | undefined;
  /** Rows per transaction. */
  readonly chunk?: number;
}

/**
 * Requeues in chunks, each one transaction: rows back to pending, and a fresh job per event
 * under its deterministic id (resendJobs).
 */
export async function requeue(pool: pg.Pool, boss: PgBoss, request: RequeueRequest): Promise<string[]> {
  const chunk = request.chunk ?? 500;
  const all: string[] = [];
  for (;;) {
    const ids = await withTransaction(pool, async (client) => {
      const result = await client.query<{ event_id: string }>(REQUEUE_ROWS, [
        request.endpoint,
        request.statuses,
        request.eventId ?? null,
        chunk,
      ]);
      const picked = result.rows.map((row) => row.event_id);
      await resendJobs(boss, client, request.endpoint, picked);
      return picked;
    });
    all.push(...ids);
    if (ids.length < chunk) return all;
  }
}

/**
 * A job per event in the caller's transaction (see sendApplyJobs: a finished job under the same
 * id is replaced, so the new one starts with a full retry budget). An event whose previous job is
 * running right now is left to that attempt's outcome: the whole chunk rolls back and the
 * operator is asked to try again shortly.
 */
async function resendJobs(
  boss: PgBoss,
  client: pg.PoolClient,
  endpoint: string,
  eventIds: readonly string[],
) {
  const { busy } = await sendApplyJobs(boss, client, endpoint, eventIds);
  if (busy.length > 0) {
    throw new HookgateError(
      'job_busy',
      `An attempt for ${busy[0]} (and ${busy.length - 1} other event(s)) of ${endpoint} is running right now; nothing was requeued. Try again in a minute.`,
    );
  }
}

/** Pending rows, oldest first, to check for a missing job (bounded per call). */
const PENDING_EVENT_IDS = `
  SELECT event_id FROM hookgate.inbox
   WHERE endpoint = $1 AND status = 'pending'
   ORDER BY received_at, event_id
   LIMIT $2`;

/**
 * Carries the attempts of the orphans that are still pending over (as `requeue` does), so the
 * fresh job counts on from them; the UPDATE also locks them for the rest of the transaction.
 */
const CARRY_OVER_PENDING_ATTEMPTS = `
  UPDATE hookgate.inbox
     SET requeued_attempts = attempts
   WHERE endpoint = $1 AND event_id = ANY($2::text[]) AND status = 'pending'
  RETURNING event_id`;

// `failed` is not an orphan: the job ran out of attempts and its dead letter settles the row.
const NOT_ORPHANED = new Set(['created', 'retry', 'active', 'failed']);

/**
 * Pending rows whose job is gone or finished (deleted by retention, a dead-letter settlement
 * that kept failing, an operator's mistake) would wait forever: nothing would ever apply them.
 * This finds them and sends each a fresh job, leaving rows with a live job alone.
 */
export async function requeueOrphans(
  pool: pg.Pool,
  boss: PgBoss,
  endpoint: string,
  limit = 10_000,
): Promise<string[]> {
  const queue = applyQueue(endpoint);
  const pending = await pool.query<{ event_id: string }>(PENDING_EVENT_IDS, [endpoint, limit]);
  const orphans: string[] = [];
  for (const { event_id: eventId } of pending.rows) {
    const job = await boss.getJobById(queue, jobIdFor(endpoint, eventId));
    if (!job || !NOT_ORPHANED.has(job.state)) orphans.push(eventId);
  }
  if (orphans.length === 0) return [];
  return await withTransaction(pool, async (client) => {
    const locked = await client.query<{ event_id: string }>(CARRY_OVER_PENDING_ATTEMPTS, [endpoint, orphans]);
    const ids = locked.rows.map((row) => row.event_id);
    await resendJobs(boss, client, endpoint, ids);
    return ids;
  });
}
