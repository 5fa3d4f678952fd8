// An inbox row's status, the one place that spells the set each status belongs to. SQL uses the
// fragments below; nothing else writes these lists out.

export const INBOX_STATUSES = ['pending', 'processed', 'ignored', 'stale', 'parked', 'dead'] as const;

/** Applied: the event's effect (or its decision not to have one) has committed. Final. */
export const SETTLED_STATUSES = ['processed', 'ignored', 'stale'] as const;

/** Stopped, waiting for an operator: out of attempts (`parked`: missing context; `dead`: failed). */
export const STUCK_STATUSES = ['parked', 'dead'] as const;

/** A status list as an SQL list of literals, e.g. `'processed', 'ignored', 'stale'`. */
export function sqlList(statuses: readonly string[]): string {
  return statuses.map((status) => `'${status}'`).join(', ');
}

/** `'processed', 'ignored', 'stale'`, for `status IN (…)`. */
export const SETTLED_SQL = sqlList(SETTLED_STATUSES);
/** `'parked', 'dead'`. */
export const STUCK_SQL = sqlList(STUCK_STATUSES);
