// What `requeue` and `discard` act on: one endpoint's rows in some statuses, narrowed by optional
// filters (ids, type, a window of received_at), oldest first. One spelling of the filter, the
// dry run's read, the parameters and the audit's record of them, for both actions (and the
// console's forms of them); the actions themselves are the SECURITY DEFINER functions
// requeue_events and discard_events, which take the same parameters.

/** An operator's selection of one endpoint's events. */
export interface EventSelection {
  readonly endpoint: string;
  readonly statuses: readonly string[];
  /** Only these events (none: any). */
  readonly eventIds?: readonly string[] | undefined;
  readonly eventType?: string | undefined;
  readonly since?: Date | undefined;
  readonly until?: Date | undefined;
}

/** A selected event as a dry run lists it, with its state now. */
export interface SelectedEvent {
  readonly event_id: string;
  readonly event_type: string;
  readonly status: string;
  readonly attempts: number;
  readonly last_error: string | null;
  readonly received_at: Date;
}

/**
 * The selection ($1 endpoint, $2 statuses, $3 ids, $5 type, $6 since, $7 until; NULL means "any";
 * $4, the most rows, is the statements'): selectionParams gives them in this order.
 */
export const SELECTED = `endpoint = $1 AND status = ANY($2::text[])
       AND ($3::text[] IS NULL OR event_id = ANY($3::text[]))
       AND ($5::text IS NULL OR event_type = $5)
       AND ($6::timestamptz IS NULL OR received_at >= $6)
       AND ($7::timestamptz IS NULL OR received_at < $7)`;

/** What an action would touch, for `--dry-run` (no locks, nothing changed). */
export const PREVIEW_SELECTED = `
  SELECT event_id, event_type, status, attempts, last_error, received_at
    FROM hookgate.inbox
   WHERE ${SELECTED}
   ORDER BY received_at, event_id
   LIMIT $4`;

/** $1 to $7 of the statements above (and of the actions' function calls). */
export function selectionParams(selection: EventSelection, limit: number): unknown[] {
  return [
    selection.endpoint,
    selection.statuses,
    selection.eventIds && selection.eventIds.length > 0 ? selection.eventIds : null,
    limit,
    selection.eventType ?? null,
    selection.since ?? null,
    selection.until ?? null,
  ];
}

/** The selection as an audit row records it (`filters`). */
export function selectionFilters(selection: EventSelection): Record<string, unknown> {
  return {
    statuses: selection.statuses,
    ...(selection.eventIds && selection.eventIds.length > 0 ? { ids: selection.eventIds } : {}),
    ...(selection.eventType ? { type: selection.eventType } : {}),
    ...(selection.since ? { since: selection.since.toISOString() } : {}),
    ...(selection.until ? { until: selection.until.toISOString() } : {}),
  };
}
