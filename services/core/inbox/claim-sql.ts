/**
 * The claim: one INSERT for a whole batch. ON CONFLICT DO NOTHING (on any unique key: the
 * primary key, or the body digest of providers whose id header is unsigned — see migration
 * 0005) makes a duplicate a no-op
 * that still waits for a concurrent claim of the same key to commit or roll back, so a
 * duplicate is only acknowledged once the original is durable. RETURNING names the rows
 * this statement created; everything else in the batch was a duplicate.
 */
export const CLAIM_INBOX_ROWS = `
  INSERT INTO hookgate.inbox
    (endpoint, event_id, provider, event_type, entity_type, entity_id, entity_version, payload, headers, traceparent,
     body_digest, received_via)
  SELECT *
  FROM unnest(
    $1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[],
    $7::bigint[], $8::jsonb[], $9::jsonb[], $10::text[], $11::bytea[], $12::text[]
  )
  ON CONFLICT DO NOTHING
  RETURNING endpoint, event_id`;

/**
 * Takes back rows this same transaction has just claimed, when no job could be promised for
 * them (see sendApplyJobs' `busy`): the delivery is refused instead and sent again later.
 */
export const UNCLAIM_INBOX_ROWS = `
  DELETE FROM hookgate.inbox
   WHERE endpoint = $1 AND event_id = ANY($2::text[]) AND status = 'pending'`;

/**
 * The claim's delivery counts (migration 0006): one row per endpoint of the batch, added to
 * this minute's shard for this connection. Rows arrive sorted by endpoint, so two batches
 * sharing a shard lock the same rows in the same order and cannot deadlock.
 */
export const COUNT_DELIVERIES = `
  WITH durability AS (
    -- $4: the transaction wrote nothing but these counts (a batch of duplicates). Its COMMIT
    -- then need not wait for the WAL flush: a crash loses at most a moment of counts, never an
    -- event, and a duplicate stays as cheap as a read. Otherwise the setting is left as it is.
    SELECT set_config('synchronous_commit',
                      CASE WHEN $4::boolean THEN 'off' ELSE current_setting('synchronous_commit') END,
                      true)
  )
  INSERT INTO hookgate.delivery_counts AS c (endpoint, minute, shard, accepted, duplicate)
  SELECT endpoint, date_trunc('minute', now()), (pg_backend_pid() % 8)::smallint, accepted, duplicate
    FROM unnest($1::text[], $2::bigint[], $3::bigint[]) AS t(endpoint, accepted, duplicate), durability
  ON CONFLICT (endpoint, minute, shard) DO UPDATE
     SET accepted = c.accepted + EXCLUDED.accepted, duplicate = c.duplicate + EXCLUDED.duplicate`;

/**
 * `dedupe: observe`: a duplicate of a settled event is dispatched again, as requeue does (row
 * back to pending, attempts carried over, then a fresh job). A duplicate of an event still
 * pending is already on its way: nothing to do.
 */
export const REDISPATCH_SETTLED_ROWS = `
  UPDATE hookgate.inbox
     SET status = 'pending', requeued_attempts = attempts, processed_at = NULL
   WHERE endpoint = $1 AND event_id = ANY($2::text[]) AND status IN ('processed', 'ignored', 'stale')
  RETURNING event_id`;
