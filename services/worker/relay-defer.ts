import type pg from 'pg';
import type { PgBoss } from 'pg-boss';
import { executorFor } from '../core/db/executor.ts';
import { withTransaction } from '../core/db/transaction.ts';
import { holdRetryBack } from '../core/queue/job-rows.ts';

// A downstream that answered 429 or 503 with Retry-After asked for at least that long; pg-boss
// computes a retry's start from the queue's backoff alone. The job is failed (fenced by its
// attempt) and its start pushed back in one transaction, so the relay's own result for the job,
// returned afterwards, finds it no longer active and changes nothing.

/** Fails the attempt and holds its retry back `seconds`; false if the job was not retried (its last attempt, or no longer this attempt's). */
export async function failNotBefore(
  pool: pg.Pool,
  boss: PgBoss,
  queue: string,
  job: { readonly id: string; readonly retryCount: number },
  output: object,
  seconds: number,
): Promise<boolean> {
  return withTransaction(pool, async (client) => {
    await boss.fail(queue, { id: job.id, retryCount: job.retryCount }, output, { db: executorFor(client) });
    return holdRetryBack(client, queue, job.id, seconds);
  });
}
