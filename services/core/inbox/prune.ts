import type pg from 'pg';
import { pruneAttempts } from '../attempts/attempts.ts';
import { pruneAudit, recordAction } from '../audit/audit.ts';
import {
  type PruneCounts,
  type PruneOptions,
  type PruneProgress,
  pruneInBatches,
} from '../db/batched-delete.ts';
import { pruneDestinationDeliveries } from '../destinations/deliveries.ts';
import { pruneDeliveries } from '../outbox/deliveries.ts';
import { pruneQuarantine, QUARANTINE_RETENTION_MS } from '../quarantine/retention.ts';
import { pruneRawBodies } from './raw-bodies.ts';

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
  readonly inboxRows: number;
  readonly deliveries: number;
  /** Delivered rows of hookgate.destination_deliveries (the same window as `deliveries`). */
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
 * window), the delivery records, the destinations' delivered rows, the audit trail, released and
 * dropped quarantine rows; then the
 * action is recorded in the audit trail (a dry run too), with the counts.
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
      deliveries: report.deliveries,
      destination_deliveries: report.destinationDeliveries,
      attempts: report.attempts,
      audit: report.audit,
      quarantine: report.quarantine,
    },
    count:
      report.inboxRows +
      report.attempts +
      report.deliveries +
      report.destinationDeliveries +
      report.audit +
      report.quarantine,
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
  const report = {
    inboxRows: 0,
    deliveries: 0,
    destinationDeliveries: 0,
    attempts: 0,
    audit: 0,
    quarantine: 0,
  };
  report.inboxRows = (await pruneInbox(db, { ...common, olderThan: request.inboxOlderThanMs })).rows;
  if (request.signal?.aborted) return report;
  // `body: raw` bytes go with their inbox row (a dry run deleted none, so there is nothing to count).
  if (!request.dryRun) await pruneRawBodies(db, { ...common, olderThan: request.inboxOlderThanMs });
  if (request.signal?.aborted) return report;
  // The attempt history goes with the inbox window (of every event, settled or not).
  report.attempts = (await pruneAttempts(db, { ...common, olderThan: request.inboxOlderThanMs })).rows;
  if (request.signal?.aborted) return report;
  report.deliveries = (
    await pruneDeliveries(db, { ...common, olderThan: request.deliveriesOlderThanMs })
  ).rows;
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
