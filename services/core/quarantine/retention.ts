import type pg from 'pg';
import {
  type PruneCounts,
  type PruneOptions,
  pruneInBatches,
  retentionStatements,
} from '../db/batched-delete.ts';

// Retention for hookgate.quarantine: released and dropped rows go once their release or drop is
// older than the window (`hookgate prune --quarantine-older-than`, default 7 days); held rows are
// never deleted, whatever their age (they are bounded by quarantine.maxHeldPerEndpoint instead).

/** How long released and dropped rows are kept unless `--quarantine-older-than` says otherwise. */
export const QUARANTINE_RETENTION_MS = 7 * 86_400_000;

/**
 * Retention (batched-delete.ts's cursor walk), through quarantine_settled_idx; a row released
 * again since the batch read it is checked again, not deleted blindly.
 */
const RETENTION = retentionStatements({
  table: 'hookgate.quarantine',
  age: 'coalesce(released_at, dropped_at)',
  where: '(released_at IS NOT NULL OR dropped_at IS NOT NULL)',
  recheck: true,
});

/** Deletes released and dropped rows settled before the window. */
export function pruneQuarantine(db: pg.Pool, options: PruneOptions): Promise<PruneCounts> {
  return pruneInBatches(db, 'quarantine', RETENTION, options);
}
