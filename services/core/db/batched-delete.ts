import { setTimeout as sleep } from 'node:timers/promises';
import type pg from 'pg';

// Retention's batch walk, shared by the inbox and the delivery records: bounded statements, each
// its own short transaction, from a cursor on the index that orders what is deleted.

const CUTOFF = `SELECT now() - make_interval(secs => $1::double precision) AS cutoff`;

export interface PruneOptions {
  /** Retention window in milliseconds: rows older than this are deleted. */
  readonly olderThan: number;
  /** Rows per batch (one statement, one transaction each). */
  readonly batchSize: number;
  /** Count what would be deleted and delete nothing. */
  readonly dryRun?: boolean;
  /** Called after each batch with the rows it deleted and the running total (awaited). */
  readonly onBatch?: (progress: PruneProgress) => void | Promise<void>;
  /**
   * Pause between batches, ms (default 0). Retention only has to keep up with the ingest rate, so
   * a paced prune leaves the database's CPU and I/O to the ack path (docs/storage.md).
   */
  readonly pauseMs?: number;
  /** Aborting stops the run after the batch in flight (each batch commits on its own). */
  readonly signal?: AbortSignal;
}

export interface PruneProgress {
  readonly table:
    | 'inbox'
    | 'inbox_raw'
    | 'destination_deliveries'
    | 'apply_attempts'
    | 'audit'
    | 'quarantine';
  readonly deleted: number;
  readonly total: number;
}

export interface PruneCounts {
  /** Rows deleted (or, in a dry run, that would be deleted). */
  readonly rows: number;
  readonly batches: number;
  readonly dryRun: boolean;
}

/** The cutoff as the database's clock sees it: now() minus the window. */
export async function cutoffFor(db: pg.Pool, olderThanMs: number): Promise<Date> {
  return (await db.query<{ cutoff: Date }>(CUTOFF, [olderThanMs / 1000])).rows[0]!.cutoff;
}

interface BatchRow {
  readonly deleted: number;
  /** As text: a JavaScript Date would drop the microseconds. */
  readonly last: string | null;
}

/**
 * Runs a retention statement (parameters: cursor, cutoff, batch size; returns `deleted` and the
 * `last` key it deleted) batch after batch, each its own transaction, until a batch comes back
 * short. A dry run counts with `countSql` (parameter: cutoff) instead and deletes nothing.
 */
export async function pruneInBatches(
  db: pg.Pool,
  table: PruneProgress['table'],
  sql: { readonly batch: string; readonly count: string },
  options: PruneOptions,
): Promise<PruneCounts> {
  if (!Number.isInteger(options.batchSize) || options.batchSize < 1) {
    throw new RangeError(`batchSize must be a positive integer, got ${options.batchSize}`);
  }
  const cutoff = await cutoffFor(db, options.olderThan);
  if (options.dryRun) {
    const rows = (await db.query<{ rows: number }>(sql.count, [cutoff])).rows[0]!.rows;
    await options.onBatch?.({ table, deleted: rows, total: rows });
    return { rows, batches: 0, dryRun: true };
  }
  let cursor = '-infinity';
  let total = 0;
  let batches = 0;
  for (;;) {
    const result: pg.QueryResult<BatchRow> = await db.query<BatchRow>(sql.batch, [
      cursor,
      cutoff,
      options.batchSize,
    ]);
    const { deleted, last } = result.rows[0]!;
    batches += 1;
    total += deleted;
    await options.onBatch?.({ table, deleted, total });
    if (deleted < options.batchSize || last === null || options.signal?.aborted) {
      return { rows: total, batches, dryRun: false };
    }
    cursor = last;
    if (options.pauseMs) await sleep(options.pauseMs);
  }
}
