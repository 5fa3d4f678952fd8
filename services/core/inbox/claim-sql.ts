import { INSERT_JOB_ROWS } from '../queue/job-rows.ts';
import { WAKEUP_CHANNEL } from '../queue/wakeup.ts';
import { INSERT_RAW_FROM_CLAIM } from './raw-bodies.ts';
import { SETTLED_SQL } from './status.ts';

/**
 * The body digest of providers whose event id travels in an unsigned header: SHA-256 of the
 * stored payload's jsonb text, computed by PostgreSQL in the statement that stores the row. Not
 * of the bytes received: `hookgate replay` gets an event back from the provider's API as parsed
 * JSON, never as the bytes delivered, and only a canonical form both paths reach gives the same
 * digest. jsonb's text is one (keys sorted, whitespace and escapes normalised, a repeated key's
 * last value kept), and PostgreSQL computes it the same way for the gateway and the replay
 * without an extra round trip. `payload` names a jsonb column of the statement, never input.
 */
export const bodyDigestOf = (payload: string): string => `sha256(convert_to((${payload})::text, 'UTF8'))`;

/**
 * The claim: one INSERT for a whole batch. The inbox's key trigger (inbox_claim_key, on
 * hookgate.inbox_keys: the event id, or the body digest of providers whose id header is unsigned,
 * computed here when $11 says so — see bodyDigestOf) makes a duplicate a no-op that still waits
 * for a concurrent claim of the same key to commit or roll back, so a duplicate is only
 * acknowledged once the original is durable. RETURNING names the rows this statement created;
 * everything else in the batch was a duplicate.
 */
export const CLAIM_INBOX_ROWS = `
  INSERT INTO hookgate.inbox
    (endpoint, event_id, provider, event_type, entity_type, entity_id, entity_version, payload, headers, traceparent,
     body_digest, received_via, dispatch_job, payload_search)
  SELECT endpoint, event_id, provider, event_type, entity_type, entity_id, entity_version, payload, headers,
         traceparent, CASE WHEN digest_body THEN ${bodyDigestOf('payload')} END, received_via, dispatch_job,
         payload_search
  FROM unnest(
    $1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[],
    $7::bigint[], $8::jsonb[], $9::jsonb[], $10::text[], $11::boolean[], $12::text[], $13::uuid[], $14::boolean[]
  ) AS t(endpoint, event_id, provider, event_type, entity_type, entity_id, entity_version, payload, headers,
         traceparent, digest_body, received_via, dispatch_job, payload_search)
  ON CONFLICT DO NOTHING
  RETURNING endpoint, event_id`;

/**
 * The counts row a claim adds to: its connection's own. A claim holds the row's lock until its
 * COMMIT (and the WAL flush behind it), so claims on different connections must not share one;
 * with 8 shards (pid % 8), two concurrent claims shared one in eight times, and among the
 * gateway's four concurrent claims some two did more often than not. Backend pids of live
 * connections differ, and they would have to differ by a multiple of 32 767 to meet here.
 * Readers sum the shards; there is at most one row per endpoint, minute and claiming connection.
 */
const COUNTS_SHARD = '(pg_backend_pid() % 32767)::smallint';

/**
 * The claim's delivery counts: one row per endpoint of the batch, added to
 * this minute's row for this connection (COUNTS_SHARD). Rows arrive sorted by endpoint, so two
 * batches sharing a row lock the rows in the same order and cannot deadlock.
 */
export const COUNT_DELIVERIES = `
  INSERT INTO hookgate.delivery_counts AS c (endpoint, minute, shard, accepted, duplicate)
  SELECT endpoint, date_trunc('minute', now()), ${COUNTS_SHARD}, accepted, duplicate
    FROM unnest($1::text[], $2::bigint[], $3::bigint[]) AS t(endpoint, accepted, duplicate)
  ON CONFLICT (endpoint, minute, shard) DO UPDATE
     SET accepted = c.accepted + EXCLUDED.accepted, duplicate = c.duplicate + EXCLUDED.duplicate`;

/**
 * `dedupe: observe`: a duplicate of a settled event is dispatched again, as requeue does (row
 * back to pending, then a fresh job counting on from its attempts). A duplicate of an event
 * still pending is already on its way: nothing to do.
 */
export const REOPEN_SETTLED_ROWS = `
  UPDATE hookgate.inbox
     SET status = 'pending', processed_at = NULL
   WHERE endpoint = $1 AND event_id = ANY($2::text[]) AND status IN (${SETTLED_SQL})
  RETURNING event_id, attempts`;

/**
 * The whole claim in one statement, run outside an explicit transaction (its own commit, so one
 * round trip): inbox rows, one apply job per endpoint of the batch naming the rows it carries
 * (pg-boss rows written by queue/job-rows.ts) and the workers' wake-up (`pg_notify`, delivered
 * only by that commit; left out when $3 is false). The batch comes as one JSON array ($1, built
 * by claim.ts with each verified body embedded as it is): escaping a dozen array literals per
 * delivery cost the gateway more CPU than the rest of the claim. Each row carries its
 * endpoint's job id (`dispatch_job`, random, one per endpoint per batch):
 *
 * - `rows`: ON CONFLICT DO NOTHING, as CLAIM_INBOX_ROWS; returned `accepted`.
 * - `jobs`: one job per endpoint with accepted rows: `{ endpoint, eventIds }` in the claim's order.
 * - `raw`: the original bytes of accepted rows that carry them (endpoints with a `body: raw`
 *   destination, raw-bodies.ts); the other rows' inputs have no `raw_body` and write nothing.
 * - `counted`: the batch's answers added to the per-minute delivery counts, as COUNT_DELIVERIES
 *   does in the transactional claim.
 * - The guard: a job that was not created (a queue policy refused it), or an input that is not
 *   exactly the $2 claims given (a body that was not one JSON value could otherwise add rows of
 *   its own), divides by zero, which aborts the statement: nothing is committed, and the caller
 *   falls back to the transactional claim.
 *
 * The statement reads no table: conflicts are found through the unique indexes by the INSERTs
 * themselves. It is sent as a named prepared statement (CLAIM_STATEMENT_NAME), whose plan is made
 * once per connection, usually while the tables are small, and kept; a read of the inbox or the
 * job table in it would be planned as a sequential scan on empty tables by PostgreSQL 15 (and kept
 * while the tables grew: every claim then read the whole inbox). With no reads, no table size
 * can change its cost (test/integration/plan-audit.test.ts, on every supported major).
 */
export const CLAIM_STATEMENT_NAME = 'hookgate_claim';

export const CLAIM_IN_ONE_STATEMENT = `
  WITH input AS (
    SELECT x.endpoint, x.event_id, x.provider, x.event_type, x.entity_type, x.entity_id, x.entity_version,
           x.payload, x.headers, x.traceparent,
           CASE WHEN x.digest_body THEN ${bodyDigestOf('x.payload')} END AS body_digest, x.received_via,
           x.queue, x.dispatch_job, x.ord, x.raw_body, x.raw_headers, x.payload_search
      FROM json_to_recordset($1::json) AS x(
             endpoint text, event_id text, provider text, event_type text, entity_type text, entity_id text,
             entity_version bigint, payload jsonb, headers jsonb, traceparent text, digest_body boolean,
             received_via text, queue text, dispatch_job uuid, ord int, raw_body text, raw_headers jsonb,
             payload_search boolean)
  ), rows AS (
    INSERT INTO hookgate.inbox
      (endpoint, event_id, provider, event_type, entity_type, entity_id, entity_version, payload, headers,
       traceparent, body_digest, received_via, dispatch_job, payload_search)
    SELECT i.endpoint, i.event_id, i.provider, i.event_type, i.entity_type, i.entity_id, i.entity_version,
           i.payload, i.headers, i.traceparent, i.body_digest, i.received_via, i.dispatch_job, i.payload_search
      FROM input i
     ORDER BY i.ord
    ON CONFLICT DO NOTHING
    RETURNING endpoint, event_id
  ), carried AS (
    -- Each accepted row once (a key given twice in the batch is one row), with its first place.
    SELECT DISTINCT ON (r.endpoint, r.event_id) r.endpoint, r.event_id, i.queue, i.dispatch_job, i.ord
      FROM rows r
      JOIN input i ON i.endpoint = r.endpoint AND i.event_id = r.event_id
     ORDER BY r.endpoint, r.event_id, i.ord
  ), new_jobs AS (
    SELECT c.queue, c.dispatch_job AS job_id,
           jsonb_build_object('endpoint', c.endpoint, 'eventIds', jsonb_agg(c.event_id ORDER BY c.ord)) AS data,
           min(c.ord) AS ord
      FROM carried c
     GROUP BY c.queue, c.dispatch_job, c.endpoint
  ), raw AS (${INSERT_RAW_FROM_CLAIM}
  ), jobs AS (${INSERT_JOB_ROWS}
  ), woken AS (
    -- $3: false when the gateway has sent a wake-up for these endpoints moments ago and sends the
    -- next after this commit (queue/wakeup-throttle.ts).
    SELECT pg_notify('${WAKEUP_CHANNEL}', e.endpoint) FROM (SELECT DISTINCT endpoint FROM rows) e WHERE $3::boolean
  ), counted AS (
    -- Per endpoint: rows created are accepted; the rest were duplicates.
    -- Sorted by endpoint, as COUNT_DELIVERIES, so batches sharing a row cannot deadlock.
    INSERT INTO hookgate.delivery_counts AS c (endpoint, minute, shard, accepted, duplicate)
    SELECT n.endpoint, date_trunc('minute', now()), ${COUNTS_SHARD}, n.accepted, n.given - n.accepted
      FROM (SELECT i.endpoint, count(*) AS given,
                   (SELECT count(*) FROM rows r WHERE r.endpoint = i.endpoint) AS accepted
              FROM input i
             GROUP BY i.endpoint) n
     -- The input guard again (see the final SELECT), for a batch in which nothing was inserted.
     WHERE 1 / (CASE WHEN (SELECT count(*) FROM input) = $2 THEN 1 ELSE 0 END) = 1
     ORDER BY n.endpoint
    ON CONFLICT (endpoint, minute, shard) DO UPDATE
       SET accepted = c.accepted + EXCLUDED.accepted, duplicate = c.duplicate + EXCLUDED.duplicate
  )
  SELECT r.endpoint, r.event_id,
         1 / (CASE WHEN (SELECT count(*) FROM jobs) = (SELECT count(*) FROM new_jobs)
                        AND (SELECT count(*) FROM input) = $2 THEN 1 ELSE 0 END)
           + 0 * (SELECT count(*) FROM woken) AS guard
    FROM rows r`;
