import type pg from 'pg';
import type { PgBoss } from 'pg-boss';
import { type BackoffPolicy, retryDelaySeconds } from '../core/apply/backoff.ts';
import { applyEvents, type EngineDeps, type EventResult } from '../core/apply/engine.ts';
import { executorFor } from '../core/db/executor.ts';
import { withTransaction } from '../core/db/transaction.ts';
import type { Handler } from '../core/handlers/types.ts';
import { dispatchEvents } from '../core/inbox/dispatch.ts';
import { applyQueue } from '../core/queue/names.ts';

// The worker's side of an apply: the jobs it fetched, applied by the engine in one transaction,
// their failed events sent again with a backoff, and the jobs completed, all in one COMMIT.

/** A fetched apply job: the events it carries and which try of it this is. */
export interface FetchedJob {
  readonly id: string;
  readonly retryCount: number;
  readonly eventIds: readonly string[];
}

/**
 * Part of a fetched job applied in one transaction: some or all of its events, and whether that
 * transaction completes the job (its last part). A job larger than the worker's batch is applied
 * in parts; if the worker dies between them, pg-boss tries the job again and the parts already
 * committed are skipped (their rows are settled).
 */
export interface JobPart extends FetchedJob {
  readonly completes: boolean;
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
  /** Whole jobs (completed here), or parts of jobs (completed with their last part). */
  jobs: readonly (FetchedJob | JobPart)[],
  policy: JobPolicy,
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
    const done = jobs.filter((job) => !('completes' in job) || job.completes);
    if (done.length > 0) {
      await deps.boss.complete(
        applyQueue(endpoint),
        done.map(({ id, retryCount }) => ({ id, retryCount })),
        null,
        { db: executorFor(tx) },
      );
    }
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
  const byAttempt = new Map<number, { eventId: string; attempts: number; left: number }[]>();
  for (const result of results) {
    if (result.outcome !== 'retry') continue;
    const list = byAttempt.get(result.attempts) ?? [];
    list.push({ eventId: result.eventId, attempts: result.attempts, left: result.attemptsLeft ?? 1 });
    byAttempt.set(result.attempts, list);
  }
  for (const [attempt, events] of byAttempt) {
    await dispatchEvents(boss, tx, endpoint, events, {
      delaySeconds: retryDelaySeconds(attempt, policy),
      // Its tries that never report may not take the events past what they have left.
      retryLimit: Math.min(...events.map((event) => event.left)) - 1,
    });
  }
}

/**
 * Keeps, of the fetched jobs, at most `batchSize` events (in fetch order, each job's in its own
 * order) and sends the others back in new jobs with their attempts as they were, in one
 * transaction; a job left with nothing is completed there. Returns the jobs trimmed to what was
 * kept (the rows of what was handed back name their new job, so these jobs no longer apply them).
 */
export async function keepWithinBatch<J extends FetchedJob>(
  deps: ApplyJobsDeps,
  endpoint: string,
  jobs: readonly J[],
  batchSize: number,
): Promise<J[]> {
  let room = batchSize;
  const kept: J[] = [];
  const back: { job: J; eventIds: readonly string[] }[] = [];
  for (const job of jobs) {
    const take = job.eventIds.slice(0, Math.max(0, room));
    room -= take.length;
    if (take.length > 0) kept.push({ ...job, eventIds: take });
    if (take.length < job.eventIds.length) back.push({ job, eventIds: job.eventIds.slice(take.length) });
  }
  if (back.length === 0) return [...jobs];
  await withTransaction(deps.pool, async (tx) => {
    for (const { job, eventIds } of back) {
      await dispatchEvents(
        deps.boss,
        tx,
        endpoint,
        eventIds.map((eventId) => ({ eventId, attempts: 0, fromJob: job.id })),
        { keepAttempts: true },
      );
    }
    const emptied = back.filter(({ job }) => !kept.some((k) => k.id === job.id)).map(({ job }) => job);
    if (emptied.length > 0) {
      await deps.boss.complete(
        applyQueue(endpoint),
        emptied.map(({ id, retryCount }) => ({ id, retryCount })),
        null,
        { db: executorFor(tx) },
      );
    }
  });
  return kept;
}
