/**
 * The worker's SQL, batch-first: one statement locks a whole batch, one settles it, one records
 * its failures. Rows are locked in event_id order so concurrent batches never deadlock on the
 * inbox.
 */

/** Locks the batch's inbox rows; a concurrent apply of the same event waits here. */
export const LOCK_INBOX_ROWS = `
  SELECT i.event_id, i.provider, i.event_type, i.entity_type, i.entity_id,
         i.entity_version::text AS entity_version, i.payload, i.headers, i.received_at,
         i.status, i.attempts, i.requeued_attempts, i.last_error, i.traceparent
    FROM hookgate.inbox i
    JOIN unnest($2::text[]) AS k(event_id) ON k.event_id = i.event_id
   WHERE i.endpoint = $1
   ORDER BY i.event_id
   FOR UPDATE OF i`;

/** Settles applied events: processed, ignored or stale. */
export const SETTLE_APPLIED = `
  UPDATE hookgate.inbox i
     SET status = u.status, attempts = u.attempts, processed_at = now()
    FROM unnest($2::text[], $3::text[], $4::int[]) AS u(event_id, status, attempts)
   WHERE i.endpoint = $1 AND i.event_id = u.event_id`;

/** Records failed attempts; the row stays pending and pg-boss retries its job. */
export const RECORD_FAILURES = `
  UPDATE hookgate.inbox i
     SET attempts = u.attempts, last_error = u.last_error
    FROM unnest($2::text[], $3::int[], $4::text[]) AS u(event_id, attempts, last_error)
   WHERE i.endpoint = $1 AND i.event_id = u.event_id`;

/**
 * Records a failed batch (the transaction itself failed, nothing committed) on its still-pending
 * rows, so `attempts` and `last_error` tell the truth when the event later runs out of attempts.
 */
export const RECORD_BATCH_FAILURE = `
  UPDATE hookgate.inbox i
     SET attempts = i.requeued_attempts + u.retry_count + 1, last_error = $4
    FROM unnest($2::text[], $3::int[]) AS u(event_id, retry_count)
   WHERE i.endpoint = $1 AND i.event_id = u.event_id AND i.status = 'pending'`;

/** Settles events whose jobs ran out of attempts: parked or dead, never silently dropped. */
export const SETTLE_EXHAUSTED = `
  UPDATE hookgate.inbox i
     SET status = u.status, attempts = GREATEST(i.attempts, u.attempts), last_error = u.last_error
    FROM unnest($2::text[], $3::text[], $4::int[], $5::text[]) AS u(event_id, status, attempts, last_error)
   WHERE i.endpoint = $1 AND i.event_id = u.event_id AND i.status = 'pending'`;
