import { nameableInstant, parseDuration } from '../../core/config/duration.ts';
import type { Cursor, EventSearch, Status } from '../read-models/events.ts';
import { STATUSES } from '../read-models/events.ts';

/** The events page's query string as typed in its form (every field a string, or absent). */
export interface EventsQuery {
  readonly endpoint: string;
  readonly status: string;
  readonly type: string;
  readonly since: string;
  readonly until: string;
  readonly event_id: string;
  readonly entity_id: string;
  readonly contains: string;
  readonly after: string;
}

const FIELDS = [
  'endpoint',
  'status',
  'type',
  'since',
  'until',
  'event_id',
  'entity_id',
  'contains',
  'after',
] as const;
const MAX_CONTAINS = 4_096;

export function readQuery(query: Readonly<Record<string, unknown>>): EventsQuery {
  const out: Record<string, string> = {};
  for (const field of FIELDS) {
    const value = query[field];
    out[field] =
      typeof value === 'string' ? value.trim().slice(0, field === 'contains' ? MAX_CONTAINS + 1 : 1_000) : '';
  }
  return out as unknown as EventsQuery;
}

/**
 * A point in time as typed: an ISO timestamp (with an offset, or without one: UTC, which is what a
 * datetime-local field sends), or a duration meaning that long ago (15m, 2h, 7d).
 */
export function parsePointInTime(text: string, now: number): Date | null {
  const ago = parseDuration(text);
  // 99999999999d ago is no date at all (JavaScript's, or PostgreSQL's): refused like a typo.
  if (ago !== undefined) return nameableInstant(now - ago) ? new Date(now - ago) : null;
  const withZone = /(?:Z|[+-]\d{2}:?\d{2})$/i.test(text) ? text : `${text}Z`;
  if (!/^\d{4}-\d{2}-\d{2}(?:[T ]\d{2}:\d{2}(?::\d{2}(?:\.\d{1,6})?)?)?/.test(text)) return null;
  const at = new Date(withZone.replace(' ', 'T'));
  return nameableInstant(at.getTime()) ? at : null;
}

export function encodeCursor(cursor: Cursor): string {
  return Buffer.from(JSON.stringify([cursor.at, cursor.endpoint, cursor.eventId])).toString('base64url');
}

export function decodeCursor(text: string): Cursor | null {
  try {
    const value: unknown = JSON.parse(Buffer.from(text, 'base64url').toString('utf8'));
    if (!Array.isArray(value) || value.length !== 3 || !value.every((part) => typeof part === 'string'))
      return null;
    const [at, endpoint, eventId] = value as [string, string, string];
    if (
      !/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{6}Z$/.test(at) ||
      endpoint.length > 63 ||
      eventId.length > 512
    )
      return null;
    return { at, endpoint, eventId };
  } catch {
    return null;
  }
}

export type Parsed = { readonly search: EventSearch; readonly problems: readonly string[] };

/** The search the query asks for, and each field that could not be understood (said in words). */
export function parseEventsQuery(query: EventsQuery, endpoints: readonly string[], now: number): Parsed {
  const problems: string[] = [];
  const optional = (value: string) => (value === '' ? undefined : value);
  const endpoint = optional(query.endpoint);
  if (endpoint !== undefined && !endpoints.includes(endpoint))
    problems.push(`No endpoint named "${endpoint}" is configured.`);
  const status = optional(query.status);
  if (status !== undefined && !(STATUSES as readonly string[]).includes(status)) {
    problems.push(`Status must be one of ${STATUSES.join(', ')}.`);
  }
  const time = (field: 'since' | 'until', label: string) => {
    const text = optional(query[field]);
    if (text === undefined) return undefined;
    const at = parsePointInTime(text, now);
    if (!at)
      problems.push(
        `${label} "${text}" is not a time between 0001-01-01 and 9999-12-31: write 2026-11-30T02:00:00Z, or a duration ago such as 15m, 2h or 7d.`,
      );
    return at ?? undefined;
  };
  const since = time('since', 'From');
  const until = time('until', 'Until');
  if (since && until && since >= until) problems.push('"From" must be before "until".');
  let contains: unknown;
  const containsText = optional(query.contains);
  if (containsText !== undefined) {
    if (containsText.length > MAX_CONTAINS) {
      problems.push(`The payload search is longer than ${MAX_CONTAINS} characters.`);
    } else {
      try {
        contains = JSON.parse(containsText);
        if (contains === null || typeof contains !== 'object') {
          problems.push(
            'The payload search must be a JSON object or array, such as {"data":{"object":{"customer":"cus_123"}}}.',
          );
          contains = undefined;
        }
      } catch {
        problems.push(
          'The payload search is not JSON; write an object such as {"data":{"object":{"customer":"cus_123"}}}.',
        );
      }
    }
  }
  const eventId = optional(query.event_id);
  if (eventId !== undefined && eventId.length > 512) problems.push('An event id has at most 512 characters.');
  let after: Cursor | undefined;
  if (query.after !== '') {
    after = decodeCursor(query.after) ?? undefined;
    if (!after) problems.push('The page link is damaged; start again from the first page.');
  }
  return {
    search: {
      endpoint,
      status: status as Status | undefined,
      type: optional(query.type),
      since,
      until,
      eventId,
      entityId: optional(query.entity_id),
      contains,
      after,
    },
    problems,
  };
}
