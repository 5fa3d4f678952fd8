// `hookgate requeue`: parked, dead and orphaned events back to pending with a live job each.
import type pg from 'pg';
import type { PgBoss } from 'pg-boss';
import { withTransaction } from '../db/transaction.ts';
import { HookgateError } from '../errors.ts';
import { sendApplyJobs } from '../queue/apply-jobs.ts';
import { applyQueue, jobIdFor } from '../queue/names.ts';

/** The optional filters ($3 ids, $5 type, $6 since, $7 until): NULL means "any". */
const REQUEUE_FILTER = `($3::text[] IS NULL OR event_id = ANY($3::text[]))
       AND ($5::text IS NULL OR event_type = $5)
       AND ($6::timestamptz IS NULL OR received_at >= $6)
       AND ($7::timestamptz IS NULL OR received_at < $7)`;

/** What a requeue would move, for `--dry-run` (no locks, nothing changed). */
const PREVIEW_REQUEUE = `
  SELECT event_id, event_type, status, attempts, last_error, received_at
    FROM hookgate.inbox
   WHERE endpoint = $1 AND status = ANY($2::text[]) AND ${REQUEUE_FILTER}
   ORDER BY received_at, event_id
   LIMIT $4`;

/** How many events a requeue would move now (the progress bar's total). */
const COUNT_REQUEUE = `
  SELECT count(*)::bigint AS n FROM (
    SELECT 1 FROM hookgate.inbox
     WHERE endpoint = $1 AND status = ANY($2::text[]) AND ${REQUEUE_FILTER}
     LIMIT $4
  ) matching`;

/**
 * Moves parked/dead rows back to pending, remembering the attempts made so far (the next apply
 * counts on from them). Rows are locked, so a requeue cannot race a dead-letter settle.
 */
const REQUEUE_ROWS = `
  WITH picked AS (
    SELECT endpoint, event_id
      FROM hookgate.inbox
     WHERE endpoint = $1 AND status = ANY($2::text[]) AND ${REQUEUE_FILTER}
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
  /** Only these events (none: any). */
  readonly eventIds?: readonly string[] | undefined;
  readonly eventType?: string | undefined;
  readonly since?: Date | undefined;
  readonly until?: Date | undefined;
  /** Most events moved in all (default: no limit). */
  readonly limit?: number | undefined;
  /** Rows per transaction. */
  readonly chunk?: number;
  /** Called after each committed chunk with the number of events it moved. */
  readonly onChunk?: (moved: number) => void;
}

function requeueParams(request: RequeueRequest, limit: number): unknown[] {
  return [
    request.endpoint,
    request.statuses,
    request.eventIds && request.eventIds.length > 0 ? request.eventIds : null,
    limit,
    request.eventType ?? null,
    request.since ?? null,
    request.until ?? null,
  ];
}

export interface RequeueCandidate {
  readonly event_id: string;
  readonly event_type: string;
  readonly status: string;
  readonly attempts: number;
  readonly last_error: string | null;
  readonly received_at: Date;
}

export async function countRequeue(pool: pg.Pool, request: RequeueRequest): Promise<number> {
  const limit = request.limit ?? 1_000_000;
  const result = await pool.query<{ n: string }>(COUNT_REQUEUE, requeueParams(request, limit));
  return Number(result.rows[0]?.n ?? 0);
}

/** The events `requeue` would move now, oldest first; changes nothing. */
export async function previewRequeue(pool: pg.Pool, request: RequeueRequest): Promise<RequeueCandidate[]> {
  const limit = request.limit ?? 1_000_000;
  return (await pool.query<RequeueCandidate>(PREVIEW_REQUEUE, requeueParams(request, limit))).rows;
}

/**
 * Requeues in chunks, each one transaction: rows back to pending, and a fresh job per event
 * under its deterministic id (resendJobs).
 */
export async function requeue(pool: pg.Pool, boss: PgBoss, request: RequeueRequest): Promise<string[]> {
  const chunk = request.chunk ?? 500;
  const all: string[] = [];
  for (;;) {
    const remaining = request.limit === undefined ? chunk : Math.min(chunk, request.limit - all.length);
    if (remaining <= 0) return all;
    const ids = await withTransaction(pool, async (client) => {
      const result = await client.query<{ event_id: string }>(
        REQUEUE_ROWS,
        requeueParams(request, remaining),
      );
      const picked = result.rows.map((row) => row.event_id);
      await resendJobs(boss, client, request.endpoint, picked);
      return picked;
    });
    all.push(...ids);
    request.onChunk?.(ids.length);
    if (ids.length < remaining) return all;
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
 * The pending events (oldest first, at most `limit` looked at) whose job is gone or finished:
 * what `requeueOrphans` would give a new job now. Reads only (`requeue --orphans --dry-run`).
 */
export async function findOrphans(
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
  return orphans;
}

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
  const orphans = await findOrphans(pool, boss, endpoint, limit);
  if (orphans.length === 0) return [];
  return await withTransaction(pool, async (client) => {
    const locked = await client.query<{ event_id: string }>(CARRY_OVER_PENDING_ATTEMPTS, [endpoint, orphans]);
    const ids = locked.rows.map((row) => row.event_id);
    await resendJobs(boss, client, endpoint, ids);
    return ids;
  });
}
