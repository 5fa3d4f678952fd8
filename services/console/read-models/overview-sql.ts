/**
 * Deliveries per endpoint and minute since $2, summed over the claim connections' shards: a
 * primary-key range per endpoint (endpoint, minute, shard) of at most an hour of minutes.
 */
export const DELIVERIES_PER_MINUTE = `
  SELECT endpoint, minute, sum(accepted)::bigint AS accepted, sum(duplicate)::bigint AS duplicate
    FROM hookgate.delivery_counts
   WHERE endpoint = ANY ($1::text[]) AND minute >= $2::timestamptz
   GROUP BY endpoint, minute`;

/**
 * received → processed of the newest $2 events received since $1 (inbox_received_at_idx, read
 * newest first and stopped at $2), per endpoint. A sample, so the page costs the same at any
 * traffic: the figures say how many events they come from.
 */
export const LATENCY_SAMPLE = `
  WITH recent AS (
    SELECT endpoint, received_at, processed_at
      FROM hookgate.inbox
     WHERE received_at >= $1::timestamptz
     ORDER BY received_at DESC
     LIMIT $2
  )
  SELECT endpoint,
         count(*) FILTER (WHERE processed_at IS NOT NULL)::bigint AS settled,
         percentile_cont(0.5) WITHIN GROUP (ORDER BY EXTRACT(EPOCH FROM processed_at - received_at))
           FILTER (WHERE processed_at IS NOT NULL)::float8 AS p50,
         percentile_cont(0.99) WITHIN GROUP (ORDER BY EXTRACT(EPOCH FROM processed_at - received_at))
           FILTER (WHERE processed_at IS NOT NULL)::float8 AS p99
    FROM recent
   GROUP BY endpoint`;
