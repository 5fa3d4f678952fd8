import type pg from 'pg';
import { cutoffFor, type PruneCounts, type PruneOptions, pruneInBatches } from '../db/batched-delete.ts';
import {
  COUNT_PRUNABLE_INBOX_ROWS,
  dropExpiredPartitions,
  ensureInboxPartitions,
  type PartitionDrop,
  PRUNE_INBOX_ROWS_BATCH,
  pruneInboxKeys,
} from './partitions.ts';

/**
 * Retention for the inbox (docs/storage.md, "The partitioned inbox"): partitions made ahead, then
 * each week partition whose whole range is older than the cutoff dropped (its pending, parked,
 * dead and discarded rows moved to the default partition first: never deleted, whatever their
 * age), then the rows no week partition holds pruned one by one, then, on their own clock, the
 * keys of what is gone that are older than the dedupe horizon ("Dedupe horizon"): a key outlives
 * its row by that much, so a redelivery, a replay or a reconciliation of a pruned event within it
 * is still a duplicate. Rows counted are the settled rows deleted, one by one or with their
 * partition, as the dry run counts them.
 */
export async function pruneInbox(db: pg.Pool, options: InboxPruneOptions): Promise<InboxPruneCounts> {
  const rowSql = { batch: PRUNE_INBOX_ROWS_BATCH, count: COUNT_PRUNABLE_INBOX_ROWS };
  if (options.dryRun) {
    const counts = await pruneInBatches(db, 'inbox', rowSql, options);
    return { ...counts, partitions: [], keys: 0 };
  }
  const cutoff = await cutoffFor(db, options.olderThan);
  await ensureInboxPartitions(db);
  const partitions = await dropExpiredPartitions(db, cutoff);
  const inPartitions = partitions.reduce((sum, partition) => sum + partition.rows, 0);
  const counts = await pruneInBatches(db, 'inbox', rowSql, options);
  const rows = counts.rows + inPartitions;
  if (options.signal?.aborted) return { ...counts, rows, partitions, keys: 0 };
  const keys = await pruneInboxKeys(db, {
    now: options.dedupe.now,
    horizonMs: options.dedupe.horizonMs,
    batchSize: options.batchSize,
    ...(options.pauseMs ? { pauseMs: options.pauseMs } : {}),
    ...(options.signal ? { signal: options.signal } : {}),
  });
  return { ...counts, rows, partitions, keys };
}

/** The keys' retention: the caller's clock, and `dedupe.horizon`. */
export interface DedupeRetention {
  readonly now: Date;
  readonly horizonMs: number;
}

export interface InboxPruneOptions extends PruneOptions {
  readonly dedupe: DedupeRetention;
}

export interface InboxPruneCounts extends PruneCounts {
  /** Week partitions past the window: dropped, or left (and why). */
  readonly partitions: readonly PartitionDrop[];
  /** Keys deleted: of rows gone, older than the dedupe horizon. */
  readonly keys: number;
}
