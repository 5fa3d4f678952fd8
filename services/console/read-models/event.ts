import type { Queryable } from '../../core/db/pool.ts';
import { EVENT_BY_KEY } from './event-sql.ts';
import type { Status } from './events.ts';

export interface EventDetail {
  readonly endpoint: string;
  readonly event_id: string;
  readonly provider: string;
  readonly event_type: string;
  readonly entity_type: string | null;
  readonly entity_id: string | null;
  readonly entity_version: string | null;
  readonly status: Status;
  readonly attempts: number;
  readonly requeued_attempts: number;
  readonly last_error: string | null;
  readonly received_at: Date;
  readonly processed_at: Date | null;
  readonly received_via: string | null;
  readonly traceparent: string | null;
  readonly headers: Record<string, unknown>;
  readonly payload: unknown;
  readonly payload_bytes: number;
}

export interface TimelineEntry {
  /** null: a state with no recorded time of its own (now), listed last. */
  readonly at: Date | null;
  readonly what: string;
  readonly detail?: string | null;
}

export interface EventView {
  readonly event: EventDetail;
  readonly timeline: readonly TimelineEntry[];
}

/**
 * What the inbox records, in time order (deliveries to destinations have their own table). The
 * inbox keeps the first receipt, the settlement, and the attempt count (with those made before
 * the last requeue); attempts between have no time of their own, so they are told as counts, not
 * invented as moments.
 */
export function timelineOf(
  event: EventDetail,
  actions: readonly { readonly at: Date; readonly actor: string; readonly command: string }[] = [],
): TimelineEntry[] {
  const entries: TimelineEntry[] = [
    { at: event.received_at, what: `received${event.received_via ? ` (${event.received_via})` : ''}` },
  ];
  // The latest requeue the audit trail has, at its own time; without it the count stays in the
  // page's Attempts field rather than being stamped with a time it does not have.
  const requeue = actions.filter((action) => action.command === 'requeue').at(-1);
  if (event.requeued_attempts > 0 && requeue) {
    entries.push({
      at: requeue.at,
      what: `requeued by ${requeue.actor} after ${event.requeued_attempts} attempt(s)`,
    });
  }
  if (event.processed_at) {
    entries.push({
      at: event.processed_at,
      what: `settled ${event.status} after ${event.attempts} attempt(s)`,
      detail: event.status === 'processed' ? null : event.last_error,
    });
  } else if (event.attempts > 0) {
    entries.push({
      at: null,
      what: `${event.status} after ${event.attempts} attempt(s)`,
      detail: event.last_error,
    });
  }
  const time = (entry: TimelineEntry) => entry.at?.getTime() ?? Number.POSITIVE_INFINITY;
  return entries.sort((a, b) => time(a) - time(b));
}

export async function loadEvent(db: Queryable, endpoint: string, eventId: string): Promise<EventView | null> {
  const found = await db.query<EventDetail>(EVENT_BY_KEY, [endpoint, eventId]);
  const event = found.rows[0];
  if (!event) return null;
  return { event, timeline: timelineOf(event) };
}
