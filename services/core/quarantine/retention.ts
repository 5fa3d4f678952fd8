import type pg from 'pg';
import { type PruneCounts, type PruneOptions, pruneInBatches } from '../db/batched-delete.ts';

// Retention for hookgate.quarantine: released and dropped rows go once their release or drop is
// older than the window (`hookgate prune --quarantine-older-than`, default 7 days); held rows are
// never deleted, whatever their age (they are bounded by quarantine.maxHeldPerEndpoint instead).

/** How long released and dropped rows are kept unless `--quarantine-older-than` says otherwise. */
export const QUARANTINE_RETENTION_MS = 7 * 86_400_000;

/** Retention's batch (batched-delete.ts's cursor walk), through quarantine_settled_idx. */
const PRUNE_QUARANTINE_BATCH = `
  WITH gone AS (
    DELETE FROM hookgate.quarantine
     WHERE ctid = ANY (ARRAY(
             SELECT ctid FROM hookgate.quarantine
              WHERE (released_at IS NOT NULL OR dropped_at IS NOT NULL)
                AND coalesce(released_at, dropped_at) >= $1::timestamptz
                AND coalesce(released_at, dropped_at) < $2::timestamptz
              ORDER BY coalesce(released_at, dropped_at)
              LIMIT $3))
       AND (released_at IS NOT NULL OR dropped_at IS NOT NULL)
    RETURNING coalesce(released_at, dropped_at) AS settled_at
  )
  SELECT count(*)::int AS deleted, max(settled_at)::text AS last FROM gone`;

const COUNT_PRUNABLE_QUARANTINE = `
  SELECT count(*)::int AS rows FROM hookgate.quarantine
   WHERE (released_at IS NOT NULL OR dropped_at IS NOT NULL)
     AND coalesce(released_at, dropped_at) < $1::timestamptz`;

/** Deletes released and dropped rows settled before the window. */
export function pruneQuarantine(db: pg.Pool, options: PruneOptions): Promise<PruneCounts> {
  return pruneInBatches(
    db,
    'quarantine',
    { batch: PRUNE_QUARANTINE_BATCH, count: COUNT_PRUNABLE_QUARANTINE },
    options,
  );
}
