import type pg from 'pg';
import {
  type PruneCounts,
  type PruneOptions,
  type PruneProgress,
  pruneInBatches,
} from '../db/batched-delete.ts';
import { pruneDestinationDeliveries } from '../destinations/deliveries.ts';
import { pruneDeliveries } from '../outbox/deliveries.ts';

export type { PruneCounts, PruneOptions, PruneProgress };

/**
 * Retention for the inbox. Settled rows (processed, ignored, stale) received before the cutoff
 * are deleted in bounded batches, oldest first, through inbox_received_at_idx; pending, parked and
 * dead rows are never deleted, whatever their age. A row's deletion ends deduplication for its
 * event id, so the window must outlast every provider's retries (Stripe: 3 days).
 *
 * Each batch is one short statement (its own transaction) that finds at most $3 rows in index
 * order from a cursor ($1, the last received_at the previous batch deleted) and deletes them by
 * ctid. The cursor is what keeps the cost proportional to what is deleted: without it every batch
 * would start at the oldest index entry again and step over the entries of every row the batches
 * before it deleted (dead until vacuum), which makes one run quadratic in the rows it deletes.
 * `>=` keeps rows that share the cursor's timestamp in reach; those already deleted are dead and
 * skipped. The cutoff ($2) is fixed once per run, so a run ends even while events keep arriving.
 */
export const PRUNE_INBOX_BATCH = `
  WITH gone AS (
    DELETE FROM hookgate.inbox
     WHERE ctid = ANY (ARRAY(
             SELECT ctid
               FROM hookgate.inbox
              WHERE received_at >= $1::timestamptz AND received_at < $2::timestamptz
                AND status IN ('processed', 'ignored', 'stale')
              ORDER BY received_at
              LIMIT $3))
       -- A row changed since the batch read it (a replay) is re-checked here, not deleted blindly.
       AND status IN ('processed', 'ignored', 'stale')
    RETURNING received_at
  )
  SELECT count(*)::int AS deleted, max(received_at)::text AS last FROM gone`;

/** What a dry run would delete: the same rows, counted through the same index. */
const COUNT_PRUNABLE_INBOX = `
  SELECT count(*)::int AS rows
    FROM hookgate.inbox
   WHERE received_at < $1::timestamptz
     AND status IN ('processed', 'ignored', 'stale')`;

export function pruneInbox(db: pg.Pool, options: PruneOptions): Promise<PruneCounts> {
  return pruneInBatches(db, 'inbox', { batch: PRUNE_INBOX_BATCH, count: COUNT_PRUNABLE_INBOX }, options);
}

export interface PruneRequest {
  readonly inboxOlderThanMs: number;
  readonly deliveriesOlderThanMs: number;
  /** Rows per statement (each its own short transaction). */
  readonly chunk: number;
  readonly dryRun?: boolean;
  readonly onBatch?: (progress: PruneProgress) => void | Promise<void>;
  readonly pauseMs?: number;
  readonly signal?: AbortSignal;
}

export interface PruneReport {
  readonly inboxRows: number;
  readonly deliveries: number;
  /** Delivered rows of hookgate.destination_deliveries (the same window as `deliveries`). */
  readonly destinationDeliveries: number;
}

/** The retentions, as `hookgate prune` runs them: the inbox, the delivery records, the destinations' delivered rows. */
export async function prune(db: pg.Pool, request: PruneRequest): Promise<PruneReport> {
  const common = {
    batchSize: request.chunk,
    ...(request.dryRun ? { dryRun: true } : {}),
    ...(request.onBatch ? { onBatch: request.onBatch } : {}),
    ...(request.pauseMs ? { pauseMs: request.pauseMs } : {}),
    ...(request.signal ? { signal: request.signal } : {}),
  };
  const inbox = await pruneInbox(db, { ...common, olderThan: request.inboxOlderThanMs });
  if (request.signal?.aborted) return { inboxRows: inbox.rows, deliveries: 0, destinationDeliveries: 0 };
  const deliveries = await pruneDeliveries(db, { ...common, olderThan: request.deliveriesOlderThanMs });
  if (request.signal?.aborted)
    return { inboxRows: inbox.rows, deliveries: deliveries.rows, destinationDeliveries: 0 };
  const destinations = await pruneDestinationDeliveries(db, {
    ...common,
    olderThan: request.deliveriesOlderThanMs,
  });
  return { inboxRows: inbox.rows, deliveries: deliveries.rows, destinationDeliveries: destinations.rows };
}

/** What prune would delete now (for `--dry-run` and the progress total); deletes nothing. */
export async function countPrunable(
  db: pg.Pool,
  windows: Pick<PruneRequest, 'inboxOlderThanMs' | 'deliveriesOlderThanMs'>,
): Promise<PruneReport> {
  return prune(db, { ...windows, chunk: 1, dryRun: true });
}
