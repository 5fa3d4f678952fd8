/** One event by its primary key, everything the detail page shows. */
export const EVENT_BY_KEY = `
  SELECT endpoint, event_id, provider, event_type, entity_type, entity_id, entity_version::text AS entity_version,
         status, attempts, requeued_attempts, last_error, received_at, processed_at, received_via,
         traceparent, headers, payload, pg_column_size(payload) AS payload_bytes
    FROM hookgate.inbox
   WHERE endpoint = $1 AND event_id = $2`;

/**
 * The downstream deliveries the event caused, keyed `endpoint:event_id` under each outbox kind
 * ($2): one primary-key look-up per kind.
 */
export const EVENT_DELIVERIES = `
  SELECT kind, url, status, attempts, http_status, left(last_error, 2000) AS last_error,
         first_attempt_at, last_attempt_at, settled_at
    FROM hookgate.outbox_deliveries
   WHERE kind = ANY ($2::text[]) AND key = $1
   ORDER BY kind`;
