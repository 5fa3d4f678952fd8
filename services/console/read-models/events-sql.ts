// The events page's statements. Each one reads the inbox through one index chosen by the most
// selective thing asked for (an event id, an entity id, a payload containment, an unsettled
// status, else time), reads at most $11 rows from it (`scanned`), and only then applies the
// other filters, so no combination of filters reads more than that whatever the inbox holds.
// Pages are keyset pages in (received_at, endpoint, event_id) order, newest first: the cursor
// $8-$10 is the last row shown (or the last row read, when a page ran out of rows to read).
//
// Parameters, the same in every statement:
//   $1 endpoint  $2 status  $3 event type  $4 since  $5 until  $6 entity id  $7 payload containment
//   $8-$10 cursor (received_at, endpoint, event_id)  $11 rows to read  $12 rows to return
//   $13 endpoints (the configured ones, or the one asked for)  $14 event id
// An unset filter is NULL; the statements are planned for their values (never prepared by name),
// so `$n IS NULL OR …` folds away before planning.

/** What a list shows of a row (no payload), and its cursor key with microseconds, in UTC. */
const COLUMNS = `endpoint, event_id, event_type, status, attempts, received_at, processed_at,
         left(last_error, 300) AS last_error, entity_id, received_via,
         to_char(received_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') AS received_key`;

const TIME_RANGE = `($4::timestamptz IS NULL OR received_at >= $4::timestamptz)
     AND ($5::timestamptz IS NULL OR received_at < $5::timestamptz)`;

/** Strictly older than the cursor row; the first term gives the index its bound. */
const BEFORE_CURSOR = `($8::timestamptz IS NULL OR (received_at <= $8::timestamptz
          AND (received_at, endpoint, event_id) < ($8::timestamptz, $9::text, $10::text)))`;

/** Evaluated on each row read, so the containment is checked only on rows read anyway. */
const CONTAINED = `($7::jsonb IS NULL OR payload @> $7::jsonb) AS contained`;

const NEWEST_FIRST = 'ORDER BY received_at DESC, endpoint DESC, event_id DESC';

/** The other filters, applied to the rows read. */
const FILTERS = `($1::text IS NULL OR endpoint = $1::text)
     AND ($2::text IS NULL OR status = $2::text)
     AND ($3::text IS NULL OR event_type = $3::text)
     AND ($6::text IS NULL OR entity_id = $6::text)
     AND ($14::text IS NULL OR event_id = $14::text)
     AND ($13::text[] IS NOT NULL)
     AND contained`;

/**
 * The matches (at most $12, numbered in the database's order, which the cursor compares in),
 * then the last row read and how many were read, which tell whether
 * the rows to read ran out before the page filled (the page then offers to read further back).
 */
function page(scanned: string): string {
  return `
  WITH scanned AS (${scanned}),
  matched AS (
    SELECT *, row_number() OVER (${NEWEST_FIRST}) AS ordinal
      FROM scanned WHERE ${FILTERS} ${NEWEST_FIRST} LIMIT $12
  )
  SELECT 'match' AS kind, m.*, NULL::bigint AS scanned_rows FROM matched m
  UNION ALL
  SELECT 'edge', e.*, NULL::bigint, (SELECT count(*) FROM scanned) FROM (
    SELECT * FROM scanned ORDER BY received_at, endpoint, event_id LIMIT 1
  ) e`;
}

/** By time alone (inbox_received_at_idx): filters the indexes cannot answer (endpoint, type, settled statuses). */
export const EVENTS_BY_TIME = page(`
    SELECT ${COLUMNS}, ${CONTAINED}
      FROM hookgate.inbox
     WHERE ${TIME_RANGE} AND ${BEFORE_CURSOR}
     ${NEWEST_FIRST}
     LIMIT $11`);

/** One event id on each endpoint asked for: primary-key look-ups, at most one row per endpoint. */
export const EVENTS_BY_ID = page(`
    SELECT ${COLUMNS}, ${CONTAINED}
      FROM hookgate.inbox
     WHERE endpoint = ANY ($13::text[]) AND event_id = $14::text AND ${TIME_RANGE} AND ${BEFORE_CURSOR}
     ${NEWEST_FIRST}
     LIMIT $11`);

/** One entity's events (inbox_entity_idx, migration 0012). */
export const EVENTS_BY_ENTITY = page(`
    SELECT ${COLUMNS}, ${CONTAINED}
      FROM hookgate.inbox
     WHERE entity_id = $6::text AND ${TIME_RANGE} AND ${BEFORE_CURSOR}
     ${NEWEST_FIRST}
     LIMIT $11`);

/** Payloads containing a JSON value (inbox_payload_path_idx: GIN, jsonb_path_ops; migration 0012). */
export const EVENTS_BY_CONTAINMENT = page(`
    SELECT ${COLUMNS}, true AS contained
      FROM hookgate.inbox
     WHERE payload @> $7::jsonb AND ${TIME_RANGE} AND ${BEFORE_CURSOR}
     ${NEWEST_FIRST}
     LIMIT $11`);

/**
 * One unsettled status, per endpoint through its partial index (the status is written into the
 * statement so the index's predicate is provable whatever the plan): each endpoint's newest
 * rows, merged. The rows read are still at most $11 in all.
 */
function byStatusPerEndpoint(status: 'pending' | 'parked' | 'dead'): string {
  return page(`
    SELECT s.* FROM unnest($13::text[]) AS wanted(name)
    CROSS JOIN LATERAL (
      SELECT ${COLUMNS}, ${CONTAINED}
        FROM hookgate.inbox i
       WHERE i.endpoint = wanted.name AND i.status = '${status}' AND ${TIME_RANGE} AND ${BEFORE_CURSOR}
       ORDER BY received_at DESC, event_id DESC
       LIMIT $11
    ) s
    ${NEWEST_FIRST}
    LIMIT $11`);
}

export const EVENTS_PENDING = byStatusPerEndpoint('pending');
export const EVENTS_PARKED = byStatusPerEndpoint('parked');
export const EVENTS_DEAD = byStatusPerEndpoint('dead');
