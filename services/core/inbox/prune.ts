import type pg from 'pg';
import { pruneAttempts } from '../attempts/attempts.ts';
import { pruneAudit, recordAction } from '../audit/audit.ts';
import {
  cutoffFor,
  type PruneCounts,
  type PruneOptions,
  type PruneProgress,
  pruneInBatches,
} from '../db/batched-delete.ts';
import { pruneDestinationDeliveries } from '../destinations/deliveries.ts';
import { pruneQuarantine, QUARANTINE_RETENTION_MS } from '../quarantine/retention.ts';
import {
  COUNT_PRUNABLE_INBOX_ROWS,
  dropExpiredPartitions,
  ensureInboxPartitions,
  type PartitionDrop,
  PRUNE_INBOX_ROWS_BATCH,
  pruneInboxKeys,
} from './partitions.ts';
import { pruneRawBodies } from './raw-bodies.ts';

export type { PruneCounts, PruneOptions, PruneProgress };

/**
 * Retention for the inbox (docs/storage.md, "The partitioned inbox"): partitions made ahead, then
 * each day partition whose whole range is older than the cutoff dropped (its pending, parked,
 * dead and discarded rows moved to the default partition first: never deleted, whatever their
 * age), then the rows no day partition holds pruned one by one, then the keys of what is gone. A
 * row's key going ends deduplication for its event id, so the window must outlast every
 * provider's retries (Stripe: 3 days).
 */
export async function pruneInbox(db: pg.Pool, options: PruneOptions): Promise<InboxPruneCounts> {
  const rowSql = { batch: PRUNE_INBOX_ROWS_BATCH, count: COUNT_PRUNABLE_INBOX_ROWS };
  if (options.dryRun) {
    const counts = await pruneInBatches(db, 'inbox', rowSql, options);
    return { ...counts, partitions: [], keys: 0 };
  }
  const cutoff = await cutoffFor(db, options.olderThan);
  await ensureInboxPartitions(db);
  const partitions = await dropExpiredPartitions(db, cutoff);
  const counts = await pruneInBatches(db, 'inbox', rowSql, options);
  if (options.signal?.aborted) return { ...counts, partitions, keys: 0 };
  const keys = await pruneInboxKeys(db, {
    cutoff,
    batchSize: options.batchSize,
    ...(options.pauseMs ? { pauseMs: options.pauseMs } : {}),
    ...(options.signal ? { signal: options.signal } : {}),
  });
  return { ...counts, partitions, keys };
}

export interface InboxPruneCounts extends PruneCounts {
  /** Day partitions past the window: dropped, or left (and why). */
  readonly partitions: readonly PartitionDrop[];
  /** Keys deleted of rows gone with their partition. */
  readonly keys: number;
}

export interface PruneRequest {
  readonly inboxOlderThanMs: number;
  readonly deliveriesOlderThanMs: number;
  /** The audit trail's window (default 365 days). */
  readonly auditOlderThanMs?: number;
  /** Released and dropped quarantine rows' window (default 7 days after the release or drop). */
  readonly quarantineOlderThanMs?: number;
  /** Rows per statement (each its own short transaction). */
  readonly chunk: number;
  readonly dryRun?: boolean;
  readonly onBatch?: (progress: PruneProgress) => void | Promise<void>;
  readonly pauseMs?: number;
  readonly signal?: AbortSignal;
  /** Who asked (recorded in hookgate.audit with what was deleted). */
  readonly actor: string;
}

export interface PruneReport {
  /** Settled inbox rows deleted one by one (rows of dropped partitions are not counted here). */
  readonly inboxRows: number;
  /** Day partitions of the inbox dropped whole. */
  readonly inboxPartitions: number;
  /** Day partitions past the window left in place, with why (too many unsettled rows, a lock wait). */
  readonly inboxPartitionsLeft: readonly PartitionDrop[];
  /** Delivered rows of hookgate.destination_deliveries settled before the deliveries window. */
  readonly destinationDeliveries: number;
  /** Rows of the per-attempt history older than the inbox window. */
  readonly attempts: number;
  /** Audit rows older than the audit window. */
  readonly audit: number;
  /** Released and dropped quarantine rows settled before the quarantine window. */
  readonly quarantine: number;
}

/** How long the audit trail is kept unless `--audit-older-than` says otherwise. */
export const AUDIT_RETENTION_MS = 365 * 86_400_000;

/**
 * The retentions, as `hookgate prune` runs them: the inbox, the attempt history (the inbox's
 * window), the destinations' delivered rows, the audit trail, released and dropped quarantine
 * rows; then the action is recorded in the audit trail (a dry run too), with the counts.
 */
export async function prune(db: pg.Pool, request: PruneRequest): Promise<PruneReport> {
  const report = await pruneBoth(db, request);
  await recordAction(db, {
    actor: request.actor,
    command: 'prune',
    filters: {
      inbox_older_than_ms: request.inboxOlderThanMs,
      deliveries_older_than_ms: request.deliveriesOlderThanMs,
      audit_older_than_ms: request.auditOlderThanMs ?? AUDIT_RETENTION_MS,
      quarantine_older_than_ms: request.quarantineOlderThanMs ?? QUARANTINE_RETENTION_MS,
      inbox_rows: report.inboxRows,
      inbox_partitions: report.inboxPartitions,
      destination_deliveries: report.destinationDeliveries,
      attempts: report.attempts,
      audit: report.audit,
      quarantine: report.quarantine,
    },
    count:
      report.inboxRows + report.attempts + report.destinationDeliveries + report.audit + report.quarantine,
    dryRun: request.dryRun === true,
  });
  return report;
}

async function pruneBoth(db: pg.Pool, request: Omit<PruneRequest, 'actor'>): Promise<PruneReport> {
  const common = {
    batchSize: request.chunk,
    ...(request.dryRun ? { dryRun: true } : {}),
    ...(request.onBatch ? { onBatch: request.onBatch } : {}),
    ...(request.pauseMs ? { pauseMs: request.pauseMs } : {}),
    ...(request.signal ? { signal: request.signal } : {}),
  };
  const report: {
    -readonly [K in keyof PruneReport]: PruneReport[K];
  } = {
    inboxRows: 0,
    inboxPartitions: 0,
    inboxPartitionsLeft: [],
    destinationDeliveries: 0,
    attempts: 0,
    audit: 0,
    quarantine: 0,
  };
  const inbox = await pruneInbox(db, { ...common, olderThan: request.inboxOlderThanMs });
  report.inboxRows = inbox.rows;
  report.inboxPartitions = inbox.partitions.filter((p) => p.moved !== null).length;
  report.inboxPartitionsLeft = inbox.partitions.filter((p) => p.moved === null);
  if (request.signal?.aborted) return report;
  // `body: raw` bytes go with their inbox row (a dry run deleted none, so there is nothing to count).
  if (!request.dryRun) await pruneRawBodies(db, { ...common, olderThan: request.inboxOlderThanMs });
  if (request.signal?.aborted) return report;
  // The attempt history goes with the inbox window (of every event, settled or not).
  report.attempts = (await pruneAttempts(db, { ...common, olderThan: request.inboxOlderThanMs })).rows;
  if (request.signal?.aborted) return report;
  report.destinationDeliveries = (
    await pruneDestinationDeliveries(db, { ...common, olderThan: request.deliveriesOlderThanMs })
  ).rows;
  if (request.signal?.aborted) return report;
  report.audit = (
    await pruneAudit(db, { ...common, olderThan: request.auditOlderThanMs ?? AUDIT_RETENTION_MS })
  ).rows;
  if (request.signal?.aborted) return report;
  report.quarantine = (
    await pruneQuarantine(db, {
      ...common,
      olderThan: request.quarantineOlderThanMs ?? QUARANTINE_RETENTION_MS,
    })
  ).rows;
  return report;
}

/** What prune would delete now (for `--dry-run` and the progress total); deletes nothing. */
export async function countPrunable(
  db: pg.Pool,
  windows: Pick<
    PruneRequest,
    'inboxOlderThanMs' | 'deliveriesOlderThanMs' | 'auditOlderThanMs' | 'quarantineOlderThanMs'
  >,
): Promise<PruneReport> {
  return pruneBoth(db, { ...windows, chunk: 1, dryRun: true });
}
