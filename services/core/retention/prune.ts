import type pg from 'pg';
import { pruneAttempts } from '../attempts/attempts.ts';
import { pruneAudit, recordAction } from '../audit/audit.ts';
import type { PruneProgress } from '../db/batched-delete.ts';
import { pruneDestinationDeliveries } from '../destinations/deliveries.ts';
import type { PartitionDrop } from '../inbox/partitions.ts';
import { type DedupeRetention, pruneInbox } from '../inbox/prune.ts';
import { pruneRawBodies } from '../inbox/raw-bodies.ts';
import { pruneQuarantine, QUARANTINE_RETENTION_MS } from '../quarantine/retention.ts';

export interface PruneRequest {
  readonly inboxOlderThanMs: number;
  /** The keys' retention (`dedupe.horizon` and the caller's clock), apart from the payloads'. */
  readonly dedupe: DedupeRetention;
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
  /** Settled inbox rows deleted, one by one or with their week's partition. */
  readonly inboxRows: number;
  /** Of which went with dropped partitions. */
  readonly inboxRowsInPartitions: number;
  /** Deduplication keys deleted (their rows gone, their events older than the horizon). */
  readonly inboxKeys: number;
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
      dedupe_horizon_ms: request.dedupe.horizonMs,
      inbox_rows: report.inboxRows,
      inbox_rows_in_partitions: report.inboxRowsInPartitions,
      inbox_partitions: report.inboxPartitions,
      inbox_keys: report.inboxKeys,
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
    inboxRowsInPartitions: 0,
    inboxKeys: 0,
    inboxPartitions: 0,
    inboxPartitionsLeft: [],
    destinationDeliveries: 0,
    attempts: 0,
    audit: 0,
    quarantine: 0,
  };
  const inbox = await pruneInbox(db, {
    ...common,
    olderThan: request.inboxOlderThanMs,
    dedupe: request.dedupe,
  });
  report.inboxRows = inbox.rows;
  report.inboxRowsInPartitions = inbox.partitions.reduce((sum, partition) => sum + partition.rows, 0);
  report.inboxKeys = inbox.keys;
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
    'inboxOlderThanMs' | 'deliveriesOlderThanMs' | 'auditOlderThanMs' | 'quarantineOlderThanMs' | 'dedupe'
  >,
): Promise<PruneReport> {
  return pruneBoth(db, { ...windows, chunk: 1, dryRun: true });
}
