import type pg from 'pg';
import type { PgBoss } from 'pg-boss';
import { type BackoffPolicy, retryDelaySeconds } from '../core/apply/backoff.ts';
import { applyEvents, type EngineDeps, type EventResult } from '../core/apply/engine.ts';
import { executorFor } from '../core/db/executor.ts';
import { withTransaction } from '../core/db/transaction.ts';
import type { Handler } from '../core/handlers/types.ts';
import { dispatchEvents } from '../core/queue/dispatch.ts';
import { applyQueue } from '../core/queue/names.ts';

// The worker's side of an apply: the jobs it fetched, applied by the engine in one transaction,
// their failed events sent again with a backoff, and the jobs completed, all in one COMMIT.

/** A fetched apply job: the events it carries and which try of it this is. */
export interface FetchedJob {
  readonly id: string;
  readonly retryCount: number;
  readonly eventIds: readonly string[];
}

export interface JobPolicy extends BackoffPolicy {
  /** Attempts an event may make (worker.retryLimit + 1). */
  readonly maxAttempts: number;
}

export interface ApplyJobsDeps extends EngineDeps {
  readonly pool: pg.Pool;
}

/**
 * Applies the events of these jobs in one transaction on its own connection and completes the
 * jobs with it. Completion is fenced by `{ id, retryCount }`: an attempt whose job was meanwhile
 * expired and handed to another worker changes nothing in pg-boss, and the rows (locked, and
 * naming the job that carries them) let the two attempts apply each event at most once.
 *
 * Throws only if the transaction itself failed (nothing was committed); the caller then fails
 * the jobs, and pg-boss tries them again.
 */
export async function applyJobs(
  deps: ApplyJobsDeps,
  endpoint: string,
  handler: Handler,
  jobs: readonly FetchedJob[],
  policy: JobPolicy,
  /** False leaves the jobs active (a lost job's events applied one at a time: completed after the last). */
  complete = true,
): Promise<EventResult[]> {
  return withTransaction(deps.pool, async (tx) => {
    const results = await applyEvents(tx, deps, {
      endpoint,
      handler,
      targets: jobs.flatMap((job) =>
        job.eventIds.map((eventId) => ({ eventId, job: job.id, retryCount: job.retryCount })),
      ),
      maxAttempts: policy.maxAttempts,
    });
    await redispatchFailed(deps.boss, tx, endpoint, results, policy);
    if (!complete) return results;
    await deps.boss.complete(
      applyQueue(endpoint),
      jobs.map(({ id, retryCount }) => ({ id, retryCount })),
      null,
      { db: executorFor(tx) },
    );
    return results;
  });
}

/**
 * Each failed event, still pending, goes out again in a new job that starts after its backoff:
 * one job per attempt number (events that failed the same attempt wait alike).
 */
async function redispatchFailed(
  boss: PgBoss,
  tx: pg.PoolClient,
  endpoint: string,
  results: readonly EventResult[],
  policy: BackoffPolicy,
): Promise<void> {
  const byAttempt = new Map<number, { eventId: string; attempts: number }[]>();
  for (const result of results) {
    if (result.outcome !== 'retry') continue;
    const list = byAttempt.get(result.attempts) ?? [];
    list.push({ eventId: result.eventId, attempts: result.attempts });
    byAttempt.set(result.attempts, list);
  }
  for (const [attempt, events] of byAttempt) {
    await dispatchEvents(boss, tx, endpoint, events, { delaySeconds: retryDelaySeconds(attempt, policy) });
  }
}
