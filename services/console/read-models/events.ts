import type { Queryable } from '../../core/db/pool.ts';
import {
  EVENTS_BY_CONTAINMENT,
  EVENTS_BY_ENTITY,
  EVENTS_BY_ID,
  EVENTS_BY_TIME,
  EVENTS_DEAD,
  EVENTS_PARKED,
  EVENTS_PENDING,
} from './events-sql.ts';

export const STATUSES = ['pending', 'processed', 'ignored', 'stale', 'parked', 'dead'] as const;
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

/** Which index answered: shown on the page, and asserted by the plan tests. */
export type SearchPath = 'event-id' | 'entity' | 'containment' | 'status' | 'time';

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

export function chooseStatement(search: EventSearch): { path: SearchPath; text: string } {
  if (search.eventId !== undefined) return { path: 'event-id', text: EVENTS_BY_ID };
  if (search.entityId !== undefined) return { path: 'entity', text: EVENTS_BY_ENTITY };
  if (search.contains !== undefined) return { path: 'containment', text: EVENTS_BY_CONTAINMENT };
  if (search.status === 'pending') return { path: 'status', text: EVENTS_PENDING };
  if (search.status === 'parked') return { path: 'status', text: EVENTS_PARKED };
  if (search.status === 'dead') return { path: 'status', text: EVENTS_DEAD };
  return { path: 'time', text: EVENTS_BY_TIME };
}

export function eventParams(
  search: EventSearch,
  endpoints: readonly string[],
  limits: EventQueryLimits,
): unknown[] {
  return [
    search.endpoint ?? null,
    search.status ?? null,
    search.type ?? null,
    search.since ?? null,
    search.until ?? null,
    search.entityId ?? null,
    search.contains === undefined ? null : JSON.stringify(search.contains),
    search.after?.at ?? null,
    search.after?.endpoint ?? null,
    search.after?.eventId ?? null,
    limits.scanRows,
    limits.pageSize + 1,
    search.endpoint !== undefined ? [search.endpoint] : [...endpoints],
    search.eventId ?? null,
  ];
}

type Raw = EventRow & {
  kind: 'match' | 'edge';
  scanned_rows: string | null;
  contained: boolean;
  ordinal: string | null;
};

const cursorOf = (row: EventRow): Cursor => ({
  at: row.received_key,
  endpoint: row.endpoint,
  eventId: row.event_id,
});

/** One page of the inbox, newest first. */
export async function searchEvents(
  db: Queryable,
  search: EventSearch,
  endpoints: readonly string[],
  limits: EventQueryLimits,
): Promise<EventPage> {
  const { path, text } = chooseStatement(search);
  const result = await db.query<Raw>(text, eventParams(search, endpoints, limits));
  const strip = ({ kind: _k, scanned_rows: _s, contained: _c, ordinal: _o, ...row }: Raw): EventRow => row;
  const matches = result.rows
    .filter((row) => row.kind === 'match')
    .sort((a, b) => Number(a.ordinal) - Number(b.ordinal))
    .map(strip);
  const edge = result.rows.find((row) => row.kind === 'edge');
  const scanned = Number(edge?.scanned_rows ?? 0);
  if (matches.length > limits.pageSize) {
    const rows = matches.slice(0, limits.pageSize);
    return { rows, path, next: cursorOf(rows.at(-1)!), readBackTo: null };
  }
  if (edge && scanned >= limits.scanRows) {
    return { rows: matches, path, next: cursorOf(strip(edge)), readBackTo: edge.received_at };
  }
  return { rows: matches, path, next: null, readBackTo: null };
}
