// An inbox row's status, the one place that spells the set each status belongs to. SQL uses the
// fragments below; nothing else writes these lists out.

export const INBOX_STATUSES = [
  'pending',
  'processed',
  'ignored',
  'stale',
  'parked',
  'dead',
  'discarded',
] as const;

/** Applied: the event's effect (or its decision not to have one) has committed. Final. */
export const SETTLED_STATUSES = ['processed', 'ignored', 'stale'] as const;
export type SettledStatus = (typeof SETTLED_STATUSES)[number];

/** Whether a status (or a handler's outcome) is one of the settled ones. */
export function isSettled(status: unknown): status is SettledStatus {
  return (SETTLED_STATUSES as readonly unknown[]).includes(status);
}

/** Stopped, waiting for an operator: out of attempts (`parked`: missing context; `dead`: failed). */
export const STUCK_STATUSES = ['parked', 'dead'] as const;

/**
 * Dismissed by an operator (`hookgate discard`, with who, why and when): final, kept, never
 * applied, and not stuck: the backlog, the dead/parked alerts and requeue (unless asked) leave it.
 */
export const DISCARDED_STATUS = 'discarded' as const;

/** What `hookgate discard` takes: stuck events only (pending ones are still being worked on). */
export const DISCARDABLE_STATUSES = [
  'parked',
  'dead',
] as const satisfies readonly (typeof STUCK_STATUSES)[number][];

/** A status list as an SQL list of literals, e.g. `'processed', 'ignored', 'stale'`. */
export function sqlList(statuses: readonly string[]): string {
  return statuses.map((status) => `'${status}'`).join(', ');
}

/** `'processed', 'ignored', 'stale'`, for `status IN (…)`. */
export const SETTLED_SQL = sqlList(SETTLED_STATUSES);
/** `'parked', 'dead'`. */
export const STUCK_SQL = sqlList(STUCK_STATUSES);
