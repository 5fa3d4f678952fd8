import type pg from 'pg';
import { type AttemptBatch, attemptParams, recordAttemptsCte } from '../attempts/attempts.ts';
import { SETTLED_SQL, type SettledStatus, STUCK_SQL } from './status.ts';

// The inbox rows after their claim: locking them for an apply, and writing how the attempt
// ended. Every statement takes a whole batch (unnest arrays); callers pass typed rows. Rows are
// locked in event_id order, so concurrent batches never deadlock on the inbox.

/** An attempt's number: the attempts made before the row's current dispatch, plus its job's tries. */
export function attemptOf(dispatchedAttempts: number, retryCount: number): number {
  return dispatchedAttempts + retryCount + 1;
}

/** An inbox row as an apply reads it: everything the handler sees, and its dispatch. */
export interface InboxRow {
  readonly event_id: string;
  readonly provider: string;
  readonly event_type: string;
  readonly entity_type: string | null;
  readonly entity_id: string | null;
  readonly entity_version: string | null;
  readonly payload: unknown;
  readonly headers: Record<string, string>;
  readonly received_at: Date;
  readonly status: string;
  readonly attempts: number;
  /** Attempts made before its latest requeue: its budget of attempts counts from here. */
  readonly requeued_attempts: number;
  readonly dispatched_attempts: number;
  readonly dispatch_job: string | null;
  readonly last_error: string | null;
  readonly traceparent: string | null;
}

/** A concurrent apply of the same event waits here. */
const LOCK_FOR_APPLY = `
  SELECT i.event_id, i.provider, i.event_type, i.entity_type, i.entity_id,
         i.entity_version::text AS entity_version, i.payload, i.headers, i.received_at,
         i.status, i.attempts, i.requeued_attempts, i.dispatched_attempts, i.dispatch_job::text AS dispatch_job, i.last_error,
         i.traceparent
    FROM hookgate.inbox i
    JOIN unnest($2::text[]) AS k(event_id) ON k.event_id = i.event_id
   WHERE i.endpoint = $1
   ORDER BY i.event_id
   FOR UPDATE OF i`;

export async function lockForApply(
  client: pg.ClientBase,
  endpoint: string,
  eventIds: readonly string[],
): Promise<InboxRow[]> {
  return (await client.query<InboxRow>(LOCK_FOR_APPLY, [endpoint, eventIds])).rows;
}

/** An event applied: how its row settles. */
export interface Applied {
  readonly eventId: string;
  readonly status: SettledStatus;
  readonly attempts: number;
}

/** An event that will not be applied: out of attempts (parked or dead), or unusable (dead). */
export interface Ended {
  readonly eventId: string;
  readonly status: 'parked' | 'dead';
  readonly attempts: number;
  readonly lastError: string;
}

/** A failed attempt: the row stays pending and is sent again. */
export interface FailedAttempt {
  readonly eventId: string;
  readonly attempts: number;
  readonly lastError: string;
}

const SETTLE_UPDATE = `
  UPDATE hookgate.inbox i
     SET status = coalesce(u.status, i.status),
         attempts = CASE WHEN u.status IN (${STUCK_SQL}) THEN GREATEST(i.attempts, u.attempts)
                         ELSE u.attempts END,
         last_error = CASE WHEN u.status IN (${SETTLED_SQL}) THEN i.last_error
                           ELSE u.last_error END,
         processed_at = CASE WHEN u.status IN (${SETTLED_SQL}) THEN now()
                             ELSE i.processed_at END
    FROM unnest($2::text[], $3::text[], $4::int[], $5::text[]) AS u(event_id, status, attempts, last_error)
   WHERE i.endpoint = $1 AND i.event_id = u.event_id AND i.status = 'pending'`;

const SETTLE_BATCH = SETTLE_UPDATE;
/** The same, with the batch's attempt history written in the same statement (apply_attempts). */
const SETTLE_BATCH_RECORDING = `WITH ${recordAttemptsCte(1, 6)}
${SETTLE_UPDATE}`;

/**
 * A whole batch's attempt in one statement: applied events settle (processed, ignored, stale),
 * ended ones stop (parked, dead), failed ones record the attempt and its error and stay pending.
 * Only pending rows change.
 */
export async function settleBatch(
  client: pg.ClientBase,
  endpoint: string,
  batch: {
    readonly applied: readonly Applied[];
    readonly ended: readonly Ended[];
    readonly failed: readonly FailedAttempt[];
  },
  /** The attempts to record in the history, in the same statement. */
  attempts?: AttemptBatch,
): Promise<void> {
  const rows = [
    ...batch.applied.map((r) => [r.eventId, r.status, r.attempts, null] as const),
    ...batch.ended.map((r) => [r.eventId, r.status, r.attempts, r.lastError] as const),
    ...batch.failed.map((r) => [r.eventId, null, r.attempts, r.lastError] as const),
  ];
  if (rows.length === 0) return;
  const settle = [
    endpoint,
    rows.map((r) => r[0]),
    rows.map((r) => r[1]),
    rows.map((r) => r[2]),
    rows.map((r) => r[3]),
  ];
  if (attempts && attempts.records.length > 0)
    await client.query(SETTLE_BATCH_RECORDING, [...settle, ...attemptParams(attempts)]);
  else await client.query(SETTLE_BATCH, settle);
}

// attemptOf, in SQL: the rows are not read first on this error path.
const RECORD_BATCH_FAILURE = `
  UPDATE hookgate.inbox i
     SET attempts = i.dispatched_attempts + u.retry_count + 1, last_error = $4
    FROM unnest($2::text[], $3::int[]) AS u(event_id, retry_count)
   WHERE i.endpoint = $1 AND i.event_id = u.event_id AND i.status = 'pending'
  RETURNING i.event_id, i.attempts`;

/**
 * Records a failed batch (the transaction itself failed, nothing committed) on its still-pending
 * rows, so `attempts` and `last_error` tell people the truth; returns the attempts it counted.
 * Nothing decides from it: pg-boss retries the batch's jobs.
 */
export async function recordBatchFailure(
  db: pg.Pool | pg.ClientBase,
  endpoint: string,
  events: readonly { readonly eventId: string; readonly retryCount: number }[],
  lastError: string,
): Promise<{ eventId: string; attempts: number }[]> {
  const result = await db.query<{ event_id: string; attempts: number }>(RECORD_BATCH_FAILURE, [
    endpoint,
    events.map((event) => event.eventId),
    events.map((event) => event.retryCount),
    lastError,
  ]);
  return result.rows.map((row) => ({ eventId: row.event_id, attempts: row.attempts }));
}

const EVENT_STATUS = `
  SELECT status, last_error FROM hookgate.inbox WHERE endpoint = $1 AND event_id = $2`;

/** An event's status and last error, or null when the inbox has no such event. */
export async function eventStatus(
  db: pg.Pool | pg.ClientBase,
  endpoint: string,
  eventId: string,
): Promise<{ status: string; last_error: string | null } | null> {
  const { rows } = await db.query<{ status: string; last_error: string | null }>(EVENT_STATUS, [
    endpoint,
    eventId,
  ]);
  return rows[0] ?? null;
}
