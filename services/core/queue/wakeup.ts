/**
 * Workers poll, but a claim also wakes them: the claim transaction sends
 * `NOTIFY hookgate_apply, '<endpoint>'`, which PostgreSQL delivers only if it commits, and the
 * worker's listener wakes that endpoint's idle loops at once. Polling stays as the fallback
 * (retries that become due later, a lost listener connection, PgBouncer in transaction mode).
 */
export const WAKEUP_CHANNEL = 'hookgate_apply';

// Endpoint names are validated by the config schema to this shape, so they can be written
// into the NOTIFY statement as literals; the check here keeps that true for any caller.
const SAFE_NAME = /^[a-z0-9][a-z0-9_-]{0,62}$/;

/**
 * `NOTIFY …; COMMIT` as one simple query: the wake-up rides on the commit's round trip.
 * NOTIFY takes no bind parameters, hence literals, guarded above.
 */
export function commitWithWakeup(endpoints: Iterable<string>): string {
  const statements: string[] = [];
  for (const endpoint of new Set(endpoints)) {
    if (!SAFE_NAME.test(endpoint))
      throw new Error(`endpoint name ${JSON.stringify(endpoint)} is not safe to notify`);
    statements.push(`NOTIFY ${WAKEUP_CHANNEL}, '${endpoint}'`);
  }
  statements.push('COMMIT');
  return statements.join('; ');
}

/** A wake-up sent on its own, after claims that committed without one (wakeup-throttle.ts). */
export const NOTIFY_ENDPOINTS = `SELECT pg_notify($1, e) FROM unnest($2::text[]) AS e`;
