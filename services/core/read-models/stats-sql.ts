import { DISCARDED_STATUS, SETTLED_SQL } from '../inbox/status.ts';

/**
 * Settled (and discarded) rows received in the window, by endpoint and status (received_at index), test events
 * ($3, settled `ignored` by every handler) apart from the rest.
 */
export const SETTLED_IN_WINDOW = `
  SELECT endpoint, status, event_type = $3 AS test, count(*)::bigint AS events
    FROM hookgate.inbox
   WHERE received_at >= $1 AND status IN (${SETTLED_SQL}, '${DISCARDED_STATUS}')
     AND ($2::text IS NULL OR endpoint = $2)
   GROUP BY endpoint, status, event_type = $3`;

/** received→processed over the rows settled from the window, per endpoint. */
export const LATENCY_IN_WINDOW = `
  SELECT endpoint,
         percentile_cont(0.5) WITHIN GROUP (ORDER BY EXTRACT(EPOCH FROM processed_at - received_at))::float8 AS p50,
         percentile_cont(0.99) WITHIN GROUP (ORDER BY EXTRACT(EPOCH FROM processed_at - received_at))::float8 AS p99
    FROM hookgate.inbox
   WHERE received_at >= $1 AND processed_at IS NOT NULL
     AND ($2::text IS NULL OR endpoint = $2)
   GROUP BY endpoint`;

/** Deliveries answered 200 in the window, from the claim's per-minute counts. */
export const DELIVERIES_IN_WINDOW = `
  SELECT endpoint, sum(accepted)::bigint AS accepted, sum(duplicate)::bigint AS duplicate
    FROM hookgate.delivery_counts
   WHERE minute >= date_trunc('minute', $1::timestamptz)
     AND ($2::text IS NULL OR endpoint = $2)
   GROUP BY endpoint`;

/**
 * Whether the database has ever seen this endpoint (for commands run without a config). Each
 * look-up asks for the endpoint's first row in primary-key order, which only the primary key's
 * index gives without reading every row of the endpoint (a scalar subquery: PostgreSQL drops
 * ORDER BY and LIMIT inside EXISTS). A plain EXISTS was planned as a sequential scan that stops
 * at the first match, which for a mistyped endpoint (no match) reads the whole table.
 */
export const ENDPOINT_SEEN = `
  SELECT (SELECT event_id FROM hookgate.inbox WHERE endpoint = $1 ORDER BY event_id LIMIT 1) IS NOT NULL
      OR (SELECT minute FROM hookgate.delivery_counts WHERE endpoint = $1 ORDER BY minute, shard LIMIT 1) IS NOT NULL
         AS seen`;
