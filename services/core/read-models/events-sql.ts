// The CLI's reads of the inbox for `hookgate events list|show`: the statements and the rows
// they return. The filters are the ones `events list` and `requeue` share.

/**
 * The `$1`–`$6` filter predicate (endpoint, status, type, since, until, ids): one statement
 * serves every combination, unset filters are NULL (bind values: cli/support/filters.ts).
 */
export const FILTER_PREDICATE = `
       ($1::text IS NULL OR endpoint = $1)
   AND ($2::text IS NULL OR status = $2)
   AND ($3::text IS NULL OR event_type = $3)
   AND ($4::timestamptz IS NULL OR received_at >= $4)
   AND ($5::timestamptz IS NULL OR received_at < $5)
   AND ($6::text[] IS NULL OR event_id = ANY($6::text[]))`;

export const LIST_EVENTS = `
  SELECT endpoint, event_id, event_type, status, attempts, last_error, received_at, processed_at,
         received_via, EXTRACT(EPOCH FROM clock_timestamp() - received_at)::float8 AS age_seconds
    FROM hookgate.inbox
   WHERE ${FILTER_PREDICATE}
   ORDER BY received_at DESC, event_id
   LIMIT $7`;

export interface ListedEvent {
  endpoint: string;
  event_id: string;
  event_type: string;
  status: string;
  attempts: number;
  last_error: string | null;
  received_at: Date;
  processed_at: Date | null;
  received_via: string | null;
  age_seconds: number;
}

export const SHOW_EVENT = `
  SELECT endpoint, event_id, provider, event_type, entity_type, entity_id, entity_version::text AS entity_version,
         status, attempts, requeued_attempts, dispatched_attempts, dispatch_job::text AS dispatch_job,
         next_attempt_at, last_error, received_at, processed_at, received_via, traceparent,
         discarded_at, discarded_by, discard_reason, headers, payload
    FROM hookgate.inbox
   WHERE endpoint = $1 AND event_id = $2`;

export interface ShownEvent {
  endpoint: string;
  event_id: string;
  provider: string;
  event_type: string;
  entity_type: string | null;
  entity_id: string | null;
  entity_version: string | null;
  status: string;
  attempts: number;
  requeued_attempts: number;
  dispatched_attempts: number;
  /** The job that carries it now, or last did (null: applied in its claim, or claimed before dispatch jobs). */
  dispatch_job: string | null;
  next_attempt_at: Date | null;
  last_error: string | null;
  received_at: Date;
  processed_at: Date | null;
  received_via: string | null;
  traceparent: string | null;
  /** Set while the event is discarded (`hookgate discard`): when, by whom, why. */
  discarded_at: Date | null;
  discarded_by: string | null;
  discard_reason: string | null;
  headers: Record<string, string>;
  payload: unknown;
}
