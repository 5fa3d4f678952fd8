import type { PgBoss } from 'pg-boss';
import type { Config } from '../config/schema.ts';
import { applyQueue } from './names.ts';

/** How pg-boss retries an apply job; attempts = retryLimit + 1. */
export interface RetryPolicy {
  readonly retryLimit: number;
  readonly retryDelaySeconds: number;
  readonly retryDelayMaxSeconds: number;
  /** A job still active after this long is taken to be lost and retried (a counted attempt). */
  readonly expireInSeconds: number;
  /** Finished apply jobs (completed, or failed and dead-lettered) are deleted this long after. */
  readonly deleteAfterSeconds: number;
  /** Finished dead-letter jobs are deleted this long after. */
  readonly deadLetterDeleteAfterSeconds: number;
  /**
   * A job whose heartbeat (refreshed by its live worker) is older than this is taken to be lost
   * and retried; null: none (expireIn alone bounds the attempt).
   */
  readonly heartbeatSeconds: number | null;
}

/** 90 days. */
const APPLY_RETENTION_SECONDS = 90 * 24 * 3600;

export const DEFAULT_RETRY_POLICY: RetryPolicy = {
  retryLimit: 7,
  retryDelaySeconds: 2,
  retryDelayMaxSeconds: 600,
  expireInSeconds: 120,
  deleteAfterSeconds: 1_800,
  deadLetterDeleteAfterSeconds: 14 * 86_400,
  heartbeatSeconds: 10,
};

/** The `worker` section of the config as pg-boss queue options (pg-boss counts whole seconds). */
export function retryPolicyFrom(worker: Config['worker']): RetryPolicy {
  return {
    retryLimit: worker.retryLimit,
    retryDelaySeconds: Math.round(worker.retryDelay / 1000),
    retryDelayMaxSeconds: Math.max(1, Math.round(worker.retryDelayMax / 1000)),
    expireInSeconds: Math.max(1, Math.ceil(worker.expireIn / 1000)),
    deleteAfterSeconds: Math.max(1, Math.round(worker.completedJobRetention / 1000)),
    deadLetterDeleteAfterSeconds: Math.max(1, Math.round(worker.deadJobRetention / 1000)),
    heartbeatSeconds: heartbeatSecondsFrom(worker),
  };
}

/**
 * pg-boss takes whole seconds, at least 10. A heartbeat at or past expireIn would never fire
 * before expiry, so the queue then carries none.
 */
export function heartbeatSecondsFrom(worker: Config['worker']): number | null {
  const seconds = Math.max(10, Math.round(worker.heartbeat / 1000));
  return seconds * 1000 < worker.expireIn ? seconds : null;
}

/**
 * Creates (or brings up to date) each endpoint's apply queue, hookgate's only queues. createQueue
 * leaves an existing queue untouched, so each policy is applied with updateQueue. Gateway, worker
 * and CLI all call this, with the policy from the same config.
 *
 * An apply job's own retries (its retry limit, delay and backoff) are for attempts that never
 * reported: a worker lost mid-batch, or a batch whose transaction failed as a whole. An event's
 * own failures are counted on its inbox row and sent again in a new job by the worker
 * (apply/redispatch.ts); out of attempts, the row ends parked or dead there. There is no
 * dead-letter queue: a job that runs out of retries leaves its rows pending, and the sweeper
 * (worker/sweeper.ts) sends them again or ends them.
 */
export async function ensureQueues(
  boss: PgBoss,
  endpoints: readonly string[],
  policy: RetryPolicy = DEFAULT_RETRY_POLICY,
): Promise<void> {
  for (const endpoint of endpoints) {
    const heartbeat = policy.heartbeatSeconds;
    const options = {
      retryLimit: policy.retryLimit,
      retryDelay: policy.retryDelaySeconds,
      retryBackoff: true,
      retryDelayMax: policy.retryDelayMaxSeconds,
      expireInSeconds: policy.expireInSeconds,
      // pg-boss deletes jobs still queued after this long; the sweeper would send their rows
      // again, but queued apply jobs are kept far beyond any sane backlog.
      retentionSeconds: APPLY_RETENTION_SECONDS,
      // Finished jobs are deleted soon: the inbox row is the durable record.
      deleteAfterSeconds: policy.deleteAfterSeconds,
    };
    await boss.createQueue(applyQueue(endpoint), {
      ...options,
      ...(heartbeat === null ? {} : { heartbeatSeconds: heartbeat }),
    });
    // deadLetter: null takes the link to the dead-letter queue of earlier versions off the queue.
    await boss.updateQueue(applyQueue(endpoint), {
      ...options,
      heartbeatSeconds: heartbeat,
      deadLetter: null,
    });
  }
}
