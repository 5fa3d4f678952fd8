import type pg from 'pg';
import type { PgBoss } from 'pg-boss';
import { executorFor } from '../core/db/executor.ts';
import { type ApplyJobData, applyQueue, jobIdFor } from '../core/queue/names.ts';

/**
 * Moves parked/dead rows back to pending, remembering the attempts made so far (the next apply
 * counts on from them). Rows are locked, so a requeue cannot race a dead-letter settle.
 */
export const REQUEUE_ROWS = `
  WITH picked AS (
    SELECT endpoint, event_id
      FROM hookgate.inbox
     WHERE endpoint = $1 AND status = ANY($2::text[]) AND ($3::text IS NULL OR event_id = $3)
     ORDER BY received_at, event_id
     LIMIT $4
     FOR UPDATE
  )
  UPDATE hookgate.inbox i
     SET status = 'pending', requeued_attempts = i.attempts, processed_at = NULL
    FROM picked
   WHERE i.endpoint = picked.endpoint AND i.event_id = picked.event_id
  RETURNING i.event_id`;

export interface RequeueRequest {
  readonly endpoint: string;
  readonly statuses: readonly ('parked' | 'dead')[];
  readonly eventId?: string | undefined;
  /** Rows per transaction. */
  readonly chunk?: number;
}

/**
 * Requeues in chunks, each one transaction: rows back to pending, and a fresh job per event
 * under its deterministic id. The previous job with that id (failed after dead-lettering, or
 * retained as completed) would make a plain insert a no-op, so it is deleted first in the same
 * transaction; the new job starts with a full retry budget.
 */
export async function requeue(pool: pg.Pool, boss: PgBoss, request: RequeueRequest): Promise<string[]> {
  const queue = applyQueue(request.endpoint);
  const chunk = request.chunk ?? 500;
  const all: string[] = [];
  for (;;) {
    const client = await pool.connect();
    let broken = false;
    let ids: string[];
    try {
      await client.query('BEGIN');
      const result = await client.query<{ event_id: string }>(REQUEUE_ROWS, [
        request.endpoint,
        request.statuses,
        request.eventId ?? null,
        chunk,
      ]);
      ids = result.rows.map((row) => row.event_id);
      if (ids.length > 0) {
        const db = executorFor(client);
        const jobIds = ids.map((eventId) => jobIdFor(request.endpoint, eventId));
        await boss.deleteJob(queue, jobIds, { db });
        await boss.insert(
          queue,
          ids.map((eventId) => ({
            id: jobIdFor(request.endpoint, eventId),
            data: { endpoint: request.endpoint, eventId } satisfies ApplyJobData,
          })),
          { db },
        );
      }
      await client.query('COMMIT');
    } catch (error) {
      broken = true;
      await client.query('ROLLBACK').catch(() => {});
      throw error;
    } finally {
      client.release(broken);
    }
    all.push(...ids);
    if (ids.length < chunk) return all;
  }
}
