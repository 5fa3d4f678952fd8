import type pg from 'pg';
import type { ApplyOutcome } from '../handlers/types.ts';

// The inbox rows after their claim: locking them for an apply or a settlement, and writing how
// they ended. Every statement takes a whole batch (unnest arrays); callers pass typed rows.
// Rows are locked in event_id order, so concurrent batches never deadlock on the inbox.

/** An event's attempts so far: those made before its last requeue, plus this job's. */
export function attemptsOf(requeuedAttempts: number, retryCount: number): number {
  return requeuedAttempts + retryCount + 1;
}

/** An inbox row as an apply reads it: everything the handler sees. */
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
  readonly requeued_attempts: number;
  readonly traceparent: string | null;
}

/** A concurrent apply of the same event waits here. */
const LOCK_FOR_APPLY = `
  SELECT i.event_id, i.provider, i.event_type, i.entity_type, i.entity_id,
         i.entity_version::text AS entity_version, i.payload, i.headers, i.received_at,
         i.status, i.requeued_attempts, i.traceparent
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

/** An inbox row as settling it needs: no payload. */
export interface SettlingRow {
  readonly event_id: string;
  readonly event_type: string;
  readonly status: string;
  readonly requeued_attempts: number;
  readonly last_error: string | null;
  readonly traceparent: string | null;
}

const LOCK_FOR_SETTLING = `
  SELECT i.event_id, i.event_type, i.status, i.requeued_attempts, i.last_error, i.traceparent
    FROM hookgate.inbox i
    JOIN unnest($2::text[]) AS k(event_id) ON k.event_id = i.event_id
   WHERE i.endpoint = $1
   ORDER BY i.event_id
   FOR UPDATE OF i`;

export async function lockForSettling(
  client: pg.ClientBase,
  endpoint: string,
  eventIds: readonly string[],
): Promise<SettlingRow[]> {
  return (await client.query<SettlingRow>(LOCK_FOR_SETTLING, [endpoint, eventIds])).rows;
}

export interface Applied {
  readonly eventId: string;
  readonly status: ApplyOutcome;
  readonly attempts: number;
}

const SETTLE_APPLIED = `
  UPDATE hookgate.inbox i
     SET status = u.status, attempts = u.attempts, processed_at = now()
    FROM unnest($2::text[], $3::text[], $4::int[]) AS u(event_id, status, attempts)
   WHERE i.endpoint = $1 AND i.event_id = u.event_id`;

/** Settles applied events: processed, ignored or stale. */
export async function settleApplied(
  client: pg.ClientBase,
  endpoint: string,
  rows: readonly Applied[],
): Promise<void> {
  if (rows.length === 0) return;
  await client.query(SETTLE_APPLIED, [
    endpoint,
    rows.map((r) => r.eventId),
    rows.map((r) => r.status),
    rows.map((r) => r.attempts),
  ]);
}

export interface FailedAttempt {
  readonly eventId: string;
  readonly attempts: number;
  readonly lastError: string;
}

const RECORD_FAILURES = `
  UPDATE hookgate.inbox i
     SET attempts = u.attempts, last_error = u.last_error
    FROM unnest($2::text[], $3::int[], $4::text[]) AS u(event_id, attempts, last_error)
   WHERE i.endpoint = $1 AND i.event_id = u.event_id`;

/** Records failed attempts; the rows stay pending and pg-boss retries their jobs. */
export async function recordFailures(
  client: pg.ClientBase,
  endpoint: string,
  rows: readonly FailedAttempt[],
): Promise<void> {
  if (rows.length === 0) return;
  await client.query(RECORD_FAILURES, [
    endpoint,
    rows.map((r) => r.eventId),
    rows.map((r) => r.attempts),
    rows.map((r) => r.lastError),
  ]);
}

// attemptsOf, in SQL: the rows are not read first on this error path.
const RECORD_BATCH_FAILURE = `
  UPDATE hookgate.inbox i
     SET attempts = i.requeued_attempts + u.retry_count + 1, last_error = $4
    FROM unnest($2::text[], $3::int[]) AS u(event_id, retry_count)
   WHERE i.endpoint = $1 AND i.event_id = u.event_id AND i.status = 'pending'`;

/**
 * Records a failed batch (the transaction itself failed, nothing committed) on its still-pending
 * rows, so `attempts` and `last_error` tell people the truth. Nothing decides from it.
 */
export async function recordBatchFailure(
  db: pg.Pool | pg.ClientBase,
  endpoint: string,
  jobs: readonly { readonly eventId: string; readonly retryCount: number }[],
  lastError: string,
): Promise<void> {
  await db.query(RECORD_BATCH_FAILURE, [
    endpoint,
    jobs.map((job) => job.eventId),
    jobs.map((job) => job.retryCount),
    lastError,
  ]);
}

export interface Ended {
  readonly eventId: string;
  readonly status: 'parked' | 'dead';
  readonly attempts: number;
  readonly lastError: string;
}

const SETTLE_ENDED = `
  UPDATE hookgate.inbox i
     SET status = u.status, attempts = GREATEST(i.attempts, u.attempts), last_error = u.last_error
    FROM unnest($2::text[], $3::text[], $4::int[], $5::text[]) AS u(event_id, status, attempts, last_error)
   WHERE i.endpoint = $1 AND i.event_id = u.event_id AND i.status = 'pending'`;

/**
 * Settles events that will not be applied: out of attempts (parked or dead) or unusable (dead
 * at once). Visible, with their attempts and last error, never silently dropped.
 */
export async function settleEnded(
  client: pg.ClientBase,
  endpoint: string,
  rows: readonly Ended[],
): Promise<void> {
  if (rows.length === 0) return;
  await client.query(SETTLE_ENDED, [
    endpoint,
    rows.map((r) => r.eventId),
    rows.map((r) => r.status),
    rows.map((r) => r.attempts),
    rows.map((r) => r.lastError),
  ]);
}

const SETTLE_BATCH = `
  UPDATE hookgate.inbox i
     SET status = coalesce(u.status, i.status),
         attempts = CASE WHEN u.status IN ('parked', 'dead') THEN GREATEST(i.attempts, u.attempts)
                         ELSE u.attempts END,
         last_error = CASE WHEN u.status IN ('processed', 'ignored', 'stale') THEN i.last_error
                           ELSE u.last_error END,
         processed_at = CASE WHEN u.status IN ('processed', 'ignored', 'stale') THEN now()
                             ELSE i.processed_at END
    FROM unnest($2::text[], $3::text[], $4::int[], $5::text[]) AS u(event_id, status, attempts, last_error)
   WHERE i.endpoint = $1 AND i.event_id = u.event_id
     AND (u.status IS NULL OR u.status IN ('processed', 'ignored', 'stale') OR i.status = 'pending')`;

/**
 * A whole apply batch's settlement in one statement: what `settleApplied`, `settleEnded` and
 * `recordFailures` each do for their rows, with the same guards.
 */
export async function settleBatch(
  client: pg.ClientBase,
  endpoint: string,
  batch: {
    readonly applied: readonly Applied[];
    readonly ended: readonly Ended[];
    readonly failed: readonly FailedAttempt[];
  },
): Promise<void> {
  const rows = [
    ...batch.applied.map((r) => [r.eventId, r.status, r.attempts, null] as const),
    ...batch.ended.map((r) => [r.eventId, r.status, r.attempts, r.lastError] as const),
    ...batch.failed.map((r) => [r.eventId, null, r.attempts, r.lastError] as const),
  ];
  if (rows.length === 0) return;
  await client.query(SETTLE_BATCH, [
    endpoint,
    rows.map((r) => r[0]),
    rows.map((r) => r[1]),
    rows.map((r) => r[2]),
    rows.map((r) => r[3]),
  ]);
}
