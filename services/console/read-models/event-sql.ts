/** One event by its primary key, everything the detail page shows. */
export const EVENT_BY_KEY = `
  SELECT endpoint, event_id, provider, event_type, entity_type, entity_id, entity_version::text AS entity_version,
         status, attempts, requeued_attempts, last_error, received_at, processed_at, received_via,
         traceparent, headers, payload, pg_column_size(payload) AS payload_bytes
    FROM hookgate.inbox
   WHERE endpoint = $1 AND event_id = $2`;
