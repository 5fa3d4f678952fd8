import type { PgBoss } from 'pg-boss';
import { applyQueue, deadLetterQueue } from './names.ts';

/** How pg-boss retries an apply job; attempts = retryLimit + 1. */
export interface RetryPolicy {
  readonly retryLimit: number;
  readonly retryDelaySeconds: number;
  readonly retryDelayMaxSeconds: number;
  /** A job still active after this long is taken to be lost and retried (a counted attempt). */
  readonly expireInSeconds: number;
}

export const DEFAULT_RETRY_POLICY: RetryPolicy = {
  retryLimit: 7,
  retryDelaySeconds: 2,
  retryDelayMaxSeconds: 600,
  expireInSeconds: 120,
};

/**
 * Creates (or brings up to date) each endpoint's apply queue and its dead-letter queue.
 * createQueue leaves an existing queue untouched, so the policy is applied with updateQueue.
 */
export async function ensureQueues(
  boss: PgBoss,
  endpoints: readonly string[],
  policy: RetryPolicy = DEFAULT_RETRY_POLICY,
): Promise<void> {
  for (const endpoint of endpoints) {
    const dead = deadLetterQueue(endpoint);
    await boss.createQueue(dead, { retryLimit: 0, retentionSeconds: 14 * 24 * 3600 });
    const options = {
      retryLimit: policy.retryLimit,
      retryDelay: policy.retryDelaySeconds,
      retryBackoff: true,
      retryDelayMax: policy.retryDelayMaxSeconds,
      expireInSeconds: policy.expireInSeconds,
      deadLetter: dead,
    };
    await boss.createQueue(applyQueue(endpoint), options);
    await boss.updateQueue(applyQueue(endpoint), options);
  }
}
