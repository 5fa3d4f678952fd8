import type pg from 'pg';

/**
 * Retention. Settled inbox rows (processed, ignored, stale) older than the window are deleted
 * in chunks, oldest first, through the received_at index; pending, parked and dead rows are
 * never deleted, whatever their age. A row's deletion ends deduplication for its event id, so
 * the window must outlast every provider's retries (Stripe: 3 days).
 */
export const PRUNE_SETTLED_INBOX = `
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

/**
 * Downstream delivery records that settled (delivered, or nowhere to deliver) before the window.
 * After this, replaying an event can send its effect again (with the same Idempotency-Key).
 */
export const PRUNE_SETTLED_DELIVERIES = `
  DELETE FROM hookgate.outbox_deliveries d
   USING (
     SELECT kind, key
       FROM hookgate.outbox_deliveries
      WHERE status IN ('delivered', 'nowhere')
        AND settled_at < now() - make_interval(secs => $1::double precision)
      LIMIT $2
   ) old
   WHERE d.kind = old.kind AND d.key = old.key`;

export interface PruneRequest {
  readonly inboxOlderThanMs: number;
  readonly deliveriesOlderThanMs: number;
  /** Rows per statement (each its own short transaction). */
  readonly chunk: number;
}

export interface PruneReport {
  readonly inboxRows: number;
  readonly deliveries: number;
}

async function inChunks(db: pg.Pool, sql: string, olderThanMs: number, chunk: number): Promise<number> {
  let total = 0;
  for (;;) {
    const result = await db.query(sql, [olderThanMs / 1000, chunk]);
    total += result.rowCount ?? 0;
    if ((result.rowCount ?? 0) < chunk) return total;
  }
}

export async function prune(db: pg.Pool, request: PruneRequest): Promise<PruneReport> {
  return {
    inboxRows: await inChunks(db, PRUNE_SETTLED_INBOX, request.inboxOlderThanMs, request.chunk),
    deliveries: await inChunks(db, PRUNE_SETTLED_DELIVERIES, request.deliveriesOlderThanMs, request.chunk),
  };
}
