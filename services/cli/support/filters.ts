import { z } from 'zod';
import { INBOX_STATUSES } from '../../core/inbox/status.ts';
import { endpointName, pointInTime } from './options.ts';

/** The event filters `events list` and `requeue` share. */
export const eventFilterShape = {
  endpoint: endpointName.optional(),
  status: z.enum(INBOX_STATUSES).optional(),
  type: z.string().min(1).max(500).optional(),
  since: pointInTime().optional(),
  until: pointInTime().optional(),
  eventId: z.string().min(1).max(512).optional(),
};

export interface EventFilter {
  readonly endpoint?: string | undefined;
  readonly status?: string | undefined;
  readonly type?: string | undefined;
  readonly since?: Date | undefined;
  readonly until?: Date | undefined;
  readonly eventIds?: readonly string[] | undefined;
}

/**
 * Bind values for the `$1`–`$6` filter predicate (FILTER_PREDICATE in
 * services/core/read-models/events-sql.ts) (endpoint, status, type, since, until,
 * ids): one statement serves every combination, unset filters are NULL.
 */
export function filterParams(filter: EventFilter): unknown[] {
  return [
    filter.endpoint ?? null,
    filter.status ?? null,
    filter.type ?? null,
    filter.since ?? null,
    filter.until ?? null,
    filter.eventIds && filter.eventIds.length > 0 ? filter.eventIds : null,
  ];
}
