/** SQL of `hookgate verify`; every statement takes arrays (unnest), chunked by the caller. */

/** The inbox row of each acknowledged event (NULL status: the row is missing). */
export const ACKED_EVENTS = `
  SELECT s.endpoint, s.event_id, i.status, i.entity_type, i.entity_id,
         i.entity_version::text AS entity_version,
         CASE WHEN i.event_type = 'invoice.paid' THEN i.payload #>> '{data,object,id}' END AS invoice
    FROM unnest($1::text[], $2::text[]) AS s(endpoint, event_id)
    LEFT JOIN hookgate.inbox i ON i.endpoint = s.endpoint AND i.event_id = s.event_id`;

/** Pending rows of the run's endpoints, acknowledged in the file or not (partial index). */
export const PENDING_COUNTS = `
  SELECT endpoint, count(*)::bigint AS events
    FROM hookgate.inbox
   WHERE status = 'pending' AND endpoint = ANY($1::text[])
   GROUP BY endpoint`;

/** The oldest pending rows that are not among the acknowledged pending ones ($2, $3). */
export const OLDEST_PENDING_NOT_SENT = `
  SELECT i.endpoint, i.event_id
    FROM hookgate.inbox i
   WHERE i.status = 'pending' AND i.endpoint = ANY($1::text[])
     AND NOT EXISTS (
       SELECT 1 FROM unnest($2::text[], $3::text[]) AS s(endpoint, event_id)
        WHERE s.endpoint = i.endpoint AND s.event_id = i.event_id)
   ORDER BY i.received_at
   LIMIT $4`;

/** Endpoints that hold projected state, when no configuration says which ones project. */
export const ENDPOINTS_WITH_STATE = `
  SELECT e.endpoint
    FROM unnest($1::text[]) AS e(endpoint)
   WHERE EXISTS (SELECT 1 FROM hookgate.entity_state s WHERE s.endpoint = e.endpoint)`;

/** Endpoints that booked payments, when no configuration says which ones bill. */
export const ENDPOINTS_WITH_LEDGER = `
  SELECT e.endpoint
    FROM unnest($1::text[]) AS e(endpoint)
   WHERE EXISTS (SELECT 1 FROM billing.ledger_entries l WHERE l.endpoint = e.endpoint)`;

/** The projected version of each entity the run sent versions for. */
export const ENTITY_VERSIONS = `
  SELECT s.endpoint, s.entity_type, s.entity_id, e.version::text AS version
    FROM unnest($1::text[], $2::text[], $3::text[]) AS s(endpoint, entity_type, entity_id)
    LEFT JOIN hookgate.entity_state e
      ON e.endpoint = s.endpoint AND e.entity_type = s.entity_type AND e.entity_id = s.entity_id`;

/** Whether each paid invoice has its payment in the ledger (UNIQUE (invoice_id, kind)). */
export const PAYMENTS_BOOKED = `
  SELECT s.invoice_id, l.id IS NOT NULL AS booked, i.status AS invoice_status
    FROM unnest($1::text[]) AS s(invoice_id)
    LEFT JOIN billing.ledger_entries l ON l.invoice_id = s.invoice_id AND l.kind = 'payment'
    LEFT JOIN billing.invoices i ON i.id = s.invoice_id`;
