import type { Queryable } from '../../core/db/pool.ts';
import { INBOX_STATUSES } from '../../core/inbox/status.ts';
import { EVENT_PARAMETERS, EVENT_STATEMENTS, type EventParameter, type SearchPath } from './events-sql.ts';

export type { SearchPath } from './events-sql.ts';

export const STATUSES = INBOX_STATUSES;
export type Status = (typeof STATUSES)[number];

export interface Cursor {
  /** received_at in UTC with microseconds, as the database wrote it. */
  readonly at: string;
  readonly endpoint: string;
  readonly eventId: string;
}

export interface EventSearch {
  readonly endpoint?: string | undefined;
  readonly status?: Status | undefined;
  readonly type?: string | undefined;
  readonly since?: Date | undefined;
  readonly until?: Date | undefined;
  readonly eventId?: string | undefined;
  readonly entityId?: string | undefined;
  /** A JSON value the payload must contain (`@>`). */
  readonly contains?: unknown;
  readonly after?: Cursor | undefined;
}

export interface EventRow {
  readonly endpoint: string;
  readonly event_id: string;
  readonly event_type: string;
  readonly status: Status;
  readonly attempts: number;
  readonly received_at: Date;
  readonly processed_at: Date | null;
  readonly last_error: string | null;
  readonly entity_id: string | null;
  readonly received_via: string | null;
  readonly received_key: string;
}

export interface EventPage {
  readonly rows: EventRow[];
  readonly path: SearchPath;
  /** The next (older) page, if there may be one. */
  readonly next: Cursor | null;
  /**
   * Set when the page stopped because it had read its rows (console.scanRows) before filling: the
   * oldest row read, from where "search further back" continues.
   */
  readonly readBackTo: Date | null;
}

export interface EventQueryLimits {
  readonly pageSize: number;
  readonly scanRows: number;
}

/**
 * Whether the payload index can answer a containment search: only when every endpoint it covers
 * (the one asked for, else every endpoint) has `payloadSearch` on, since only their rows are in
 * the index (payload_search). Otherwise the containment is a filter applied to the rows read.
 */
export function payloadIndexed(
  search: EventSearch,
  endpoints: readonly string[],
  searchable: readonly string[],
): boolean {
  const scope = search.endpoint !== undefined ? [search.endpoint] : endpoints;
  return scope.length > 0 && scope.every((name) => searchable.includes(name));
}

/** The index that answers: the most selective thing asked for. */
export function choosePath(search: EventSearch, indexedPayloads: boolean): SearchPath {
  if (search.eventId !== undefined) return 'event-id';
  if (search.entityId !== undefined) return 'entity';
  if (search.contains !== undefined && indexedPayloads) return 'containment';
  if (search.status === 'pending' || search.status === 'parked' || search.status === 'dead')
    return search.status;
  return 'time';
}

export function eventParams(
  search: EventSearch,
  endpoints: readonly string[],
  limits: EventQueryLimits,
): unknown[] {
  const values: Record<EventParameter, unknown> = {
    endpoint: search.endpoint ?? null,
    status: search.status ?? null,
    type: search.type ?? null,
    since: search.since ?? null,
    until: search.until ?? null,
    entity: search.entityId ?? null,
    contains: search.contains === undefined ? null : JSON.stringify(search.contains),
    at: search.after?.at ?? null,
    after_endpoint: search.after?.endpoint ?? null,
    after_id: search.after?.eventId ?? null,
    scan: limits.scanRows,
    rows: limits.pageSize + 1,
    endpoints: search.endpoint !== undefined ? [search.endpoint] : [...endpoints],
    event_id: search.eventId ?? null,
  };
  return EVENT_PARAMETERS.map((name) => values[name]);
}

/** Whether any filter is left to apply to the rows the path reads (else every row read is shown). */
export function filtersLeft(search: EventSearch, path: SearchPath): boolean {
  const byStatus = path === 'pending' || path === 'parked' || path === 'dead';
  return (
    (search.endpoint !== undefined && path !== 'event-id' && !byStatus) ||
    (search.status !== undefined && !byStatus) ||
    search.type !== undefined ||
    (search.entityId !== undefined && path !== 'entity') ||
    (search.contains !== undefined && path !== 'containment')
  );
}

const cursorOf = (row: EventRow): Cursor => ({
  at: row.received_key,
  endpoint: row.endpoint,
  eventId: row.event_id,
});

/**
 * One page of the inbox, newest first. `searchable`: the endpoints whose payloads are indexed
 * (`payloadSearch`).
 */
export async function searchEvents(
  db: Queryable,
  search: EventSearch,
  endpoints: readonly string[],
  limits: EventQueryLimits,
  searchable: readonly string[] = [],
): Promise<EventPage> {
  const path = choosePath(search, payloadIndexed(search, endpoints, searchable));
  const statements = EVENT_STATEMENTS[path];
  const params = eventParams(search, endpoints, limits);
  const matches = (await db.query<EventRow>(statements.matches, params)).rows;
  if (matches.length > limits.pageSize) {
    const rows = matches.slice(0, limits.pageSize);
    return { rows, path, next: cursorOf(rows.at(-1)!), readBackTo: null };
  }
  // Fewer than a page: either nothing more matches, or the rows to read ran out first (which
  // only filters left to apply can cause).
  if (!filtersLeft(search, path)) return { rows: matches, path, next: null, readBackTo: null };
  const edge = (await db.query<EventRow & { scanned_rows: string }>(statements.edge, params)).rows[0];
  if (edge && Number(edge.scanned_rows) >= limits.scanRows) {
    return { rows: matches, path, next: cursorOf(edge), readBackTo: edge.received_at };
  }
  return { rows: matches, path, next: null, readBackTo: null };
}
