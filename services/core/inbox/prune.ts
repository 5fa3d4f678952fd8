import type pg from 'pg';
import { pruneSettledDeliveries } from '../outbox/deliveries.ts';

/**
 * Retention. Settled inbox rows (processed, ignored, stale) older than the window are deleted
 * in chunks, oldest first, through the received_at index; pending, parked and dead rows are
 * never deleted, whatever their age. A row's deletion ends deduplication for its event id, so
 * the window must outlast every provider's retries (Stripe: 3 days).
 */
const PRUNE_SETTLED_INBOX = `
  DELETE FROM hookgate.inbox i
   USING (
     SELECT endpoint, event_id
       FROM hookgate.inbox
      WHERE received_at < now() - make_interval(secs => $1::double precision)
        AND status IN ('processed', 'ignored', 'stale')
      ORDER BY received_at
      LIMIT $2
   ) old
   WHERE i.endpoint = old.endpoint AND i.event_id = old.event_id`;

export interface PruneRequest {
  readonly inboxOlderThanMs: number;
  readonly deliveriesOlderThanMs: number;
  /** Rows per statement (each its own short transaction). */
  readonly chunk: number;
  /** Called after each statement with the rows it deleted (progress for the command). */
  readonly onChunk?: (deleted: number) => void;
}

/** What prune would delete now (for `--dry-run` and the progress total); deletes nothing. */
const COUNT_PRUNABLE = `
  SELECT (SELECT count(*) FROM hookgate.inbox
           WHERE received_at < now() - make_interval(secs => $1::double precision)
             AND status IN ('processed', 'ignored', 'stale'))::bigint AS inbox_rows,
         (SELECT count(*) FROM hookgate.outbox_deliveries
           WHERE status IN ('delivered', 'nowhere')
             AND settled_at < now() - make_interval(secs => $2::double precision))::bigint AS deliveries`;

export async function countPrunable(
  db: pg.Pool,
  request: Pick<PruneRequest, 'inboxOlderThanMs' | 'deliveriesOlderThanMs'>,
): Promise<PruneReport> {
  const result = await db.query<{ inbox_rows: string; deliveries: string }>(COUNT_PRUNABLE, [
    request.inboxOlderThanMs / 1000,
    request.deliveriesOlderThanMs / 1000,
  ]);
  const row = result.rows[0];
  return { inboxRows: Number(row?.inbox_rows ?? 0), deliveries: Number(row?.deliveries ?? 0) };
}

export interface PruneReport {
  readonly inboxRows: number;
  readonly deliveries: number;
}

async function pruneSettledInbox(db: pg.Pool, olderThanMs: number, chunk: number): Promise<number> {
  return (await db.query(PRUNE_SETTLED_INBOX, [olderThanMs / 1000, chunk])).rowCount ?? 0;
}

/** Runs one bounded delete until it deletes less than a chunk. */
async function inChunks(
  step: () => Promise<number>,
  chunk: number,
  onChunk?: (deleted: number) => void,
): Promise<number> {
  let total = 0;
  for (;;) {
    const deleted = await step();
    total += deleted;
    onChunk?.(deleted);
    if (deleted < chunk) return total;
  }
}

export async function prune(db: pg.Pool, request: PruneRequest): Promise<PruneReport> {
  const { chunk } = request;
  return {
    inboxRows: await inChunks(
      () => pruneSettledInbox(db, request.inboxOlderThanMs, chunk),
      chunk,
      request.onChunk,
    ),
    deliveries: await inChunks(
      () => pruneSettledDeliveries(db, request.deliveriesOlderThanMs, chunk),
      chunk,
      request.onChunk,
    ),
  };
}
