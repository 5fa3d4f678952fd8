// The events page's statements. Each reads the inbox through one index, chosen by the most
// selective thing asked for (an event id, an entity id, a payload containment, an unsettled
// status, else time), reads at most :scan rows from it in page order (newest first), and applies
// the other filters to those rows only: no combination of filters reads more than :scan rows
// whatever the inbox holds. The matches come first and stop the read as soon as a page is full;
// only when the rows to read ran out before that does a second statement find the last row read
// (the page then offers to read further back from there).
//
// Pages are keyset pages in (received_at, endpoint, event_id) order; the cursor (:at, :after_endpoint,
// :after_id) is the last row shown or read. An unset filter is NULL; the statements are planned
// for their values (never prepared by name), so `:x IS NULL OR …` folds away before planning.
// Placeholders are named here and numbered once, when this module loads (numbered() below):
// nothing of a request is ever part of a statement's text.

/** The parameters, in the order every statement of this module takes them. */
export const EVENT_PARAMETERS = [
  'endpoint',
  'status',
  'type',
  'since',
  'until',
  'entity',
  'contains',
  'at',
  'after_endpoint',
  'after_id',
  'scan',
  'rows',
  'endpoints',
  'event_id',
] as const;

export type EventParameter = (typeof EVENT_PARAMETERS)[number];

const TYPES: Readonly<Record<EventParameter, string>> = {
  endpoint: 'text',
  status: 'text',
  type: 'text',
  since: 'timestamptz',
  until: 'timestamptz',
  entity: 'text',
  contains: 'jsonb',
  at: 'timestamptz',
  after_endpoint: 'text',
  after_id: 'text',
  scan: 'int',
  rows: 'int',
  endpoints: 'text[]',
  event_id: 'text',
};

/**
 * `:name` → `$n::type` in EVENT_PARAMETERS order. Every statement names all of them (the
 * filters it does not use stay `NULL IS NULL`), so one parameter list serves every statement.
 */
function numbered(text: string): string {
  const used = new Set<string>();
  const out = text.replace(/:([a-z_]+)\b/g, (whole, name: string) => {
    const index = EVENT_PARAMETERS.indexOf(name as EventParameter);
    if (index < 0) return whole;
    used.add(name);
    return `$${index + 1}::${TYPES[name as EventParameter]}`;
  });
  const missing = EVENT_PARAMETERS.filter((name) => !used.has(name));
  if (missing.length > 0) throw new Error(`events statement does not name ${missing.join(', ')}`);
  return out;
}

/** The columns read from each row. */
const RAW =
  'endpoint, event_id, event_type, status, attempts, received_at, processed_at, last_error, entity_id, received_via';

/** What a list shows of a row (no payload), and its cursor key with microseconds, in UTC. */
const COLUMNS = `endpoint, event_id, event_type, status, attempts, received_at, processed_at,
         left(last_error, 300) AS last_error, entity_id, received_via,
         to_char(received_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') AS received_key`;

const TIME_RANGE = `(:since IS NULL OR received_at >= :since) AND (:until IS NULL OR received_at < :until)`;

/** Strictly older than the cursor row; the first term gives the index its bound. */
const BEFORE_CURSOR = `(:at IS NULL OR (received_at <= :at
          AND (received_at, endpoint, event_id) < (:at, :after_endpoint, :after_id)))`;

const NEWEST_FIRST = 'ORDER BY received_at DESC, endpoint DESC, event_id DESC';

/** The other filters, applied to the rows read. */
const FILTERS = `(:endpoint IS NULL OR endpoint = :endpoint)
     AND (:status IS NULL OR status = :status)
     AND (:type IS NULL OR event_type = :type)
     AND (:entity IS NULL OR entity_id = :entity)
     AND (:event_id IS NULL OR event_id = :event_id)
     AND (:contains IS NULL OR payload @> :contains)`;

interface Path {
  /** The rows to read, newest first, at most :scan (selecting `payload` only when :contains asks). */
  readonly read: (columns: string) => string;
}

/** The page: the matches among the rows read, newest first, at most :rows of them. */
function matches(path: Path): string {
  return numbered(`
  SELECT ${COLUMNS} FROM (${path.read(`${RAW}, payload`)}) scanned
   WHERE ${FILTERS}
   ${NEWEST_FIRST}
   LIMIT :rows`);
}

/** The last row read and how many were, for a page that ran out of rows to read. */
function edge(path: Path): string {
  return numbered(`
  SELECT ${COLUMNS}, count(*) OVER () AS scanned_rows FROM (${path.read(RAW)}) scanned
   -- Names the filters it does not apply (numbered() wants every parameter named): always true.
   WHERE num_nulls(:endpoint, :status, :type, :entity, :event_id, :contains, :rows) >= 0
   ORDER BY received_at, endpoint, event_id
   LIMIT 1`);
}

/** By time alone (inbox_received_at_idx): for what no index answers (endpoint, type, settled statuses). */
const BY_TIME: Path = {
  read: (columns) => `
    SELECT ${columns} FROM hookgate.inbox
     WHERE ${TIME_RANGE} AND ${BEFORE_CURSOR} AND :endpoints IS NOT NULL
     ${NEWEST_FIRST}
     LIMIT :scan`,
};

/** One event id on each endpoint asked for: primary-key look-ups, at most one row per endpoint. */
const BY_ID: Path = {
  read: (columns) => `
    SELECT ${columns} FROM hookgate.inbox
     WHERE endpoint = ANY (:endpoints) AND event_id = :event_id AND ${TIME_RANGE} AND ${BEFORE_CURSOR}
     ${NEWEST_FIRST}
     LIMIT :scan`,
};

/** One entity's events (inbox_entity_idx). */
const BY_ENTITY: Path = {
  read: (columns) => `
    SELECT ${columns} FROM hookgate.inbox
     WHERE entity_id = :entity AND ${TIME_RANGE} AND ${BEFORE_CURSOR} AND :endpoints IS NOT NULL
     ${NEWEST_FIRST}
     LIMIT :scan`,
};

/**
 * Payloads containing a JSON value (inbox_payload_path_idx: GIN, jsonb_path_ops), for endpoints
 * whose rows are in it (`payload_search`, the index's predicate: events.ts takes this path only
 * when every endpoint searched has it).
 */
const BY_CONTAINMENT: Path = {
  read: (columns) => `
    SELECT ${columns} FROM hookgate.inbox
     WHERE payload @> :contains AND payload_search AND ${TIME_RANGE} AND ${BEFORE_CURSOR} AND :endpoints IS NOT NULL
     ${NEWEST_FIRST}
     LIMIT :scan`,
};

/**
 * One unsettled status, per endpoint through its partial index (the status is written into the
 * statement, so the index's predicate is provable whatever the plan): each endpoint's newest rows,
 * merged, still at most :scan in all.
 */
function byStatus(status: 'pending' | 'parked' | 'dead'): Path {
  return {
    read: (columns) => `
    SELECT s.* FROM unnest(:endpoints) AS wanted(name)
    CROSS JOIN LATERAL (
      SELECT ${columns} FROM hookgate.inbox
       WHERE endpoint = wanted.name AND status = '${status}' AND ${TIME_RANGE} AND ${BEFORE_CURSOR}
       ORDER BY received_at DESC, event_id DESC
       LIMIT :scan
    ) s
    ${NEWEST_FIRST}
    LIMIT :scan`,
  };
}

export type SearchPath = 'event-id' | 'entity' | 'containment' | 'pending' | 'parked' | 'dead' | 'time';

const PATHS: Readonly<Record<SearchPath, Path>> = {
  'event-id': BY_ID,
  entity: BY_ENTITY,
  containment: BY_CONTAINMENT,
  pending: byStatus('pending'),
  parked: byStatus('parked'),
  dead: byStatus('dead'),
  time: BY_TIME,
};

/** Each path's two statements, numbered once. */
export const EVENT_STATEMENTS: Readonly<
  Record<SearchPath, { readonly matches: string; readonly edge: string }>
> = Object.fromEntries(
  Object.entries(PATHS).map(([name, path]) => [name, { matches: matches(path), edge: edge(path) }]),
) as Record<SearchPath, { matches: string; edge: string }>;
