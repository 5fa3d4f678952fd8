import type { PgBoss } from 'pg-boss';
import type { Config } from '../config/schema.ts';
import { applyQueue, deadLetterQueue, outboxQueue } from './names.ts';

/** How pg-boss retries an apply job; attempts = retryLimit + 1. */
export interface RetryPolicy {
  readonly retryLimit: number;
  readonly retryDelaySeconds: number;
  readonly retryDelayMaxSeconds: number;
  /** A job still active after this long is taken to be lost and retried (a counted attempt). */
  readonly expireInSeconds: number;
}

/** 90 days. */
const APPLY_RETENTION_SECONDS = 90 * 24 * 3600;

export const DEFAULT_RETRY_POLICY: RetryPolicy = {
  retryLimit: 7,
  retryDelaySeconds: 2,
  retryDelayMaxSeconds: 600,
  expireInSeconds: 120,
};

/** The `worker` section of the config as pg-boss queue options (pg-boss counts whole seconds). */
export function retryPolicyFrom(worker: Config['worker']): RetryPolicy {
  return {
    retryLimit: worker.retryLimit,
    retryDelaySeconds: Math.round(worker.retryDelay / 1000),
    retryDelayMaxSeconds: Math.max(1, Math.round(worker.retryDelayMax / 1000)),
    expireInSeconds: Math.max(1, Math.ceil(worker.expireIn / 1000)),
  };
}

/** Outbox kinds whose queues always exist, so a handler can enqueue to them in any transaction. */
export const OUTBOX_KINDS = ['forward', 'notify'] as const;

/** Dead-lettered apply jobs are kept this long (the inbox row is the durable record). */
const DEAD_LETTER_RETENTION_SECONDS = 14 * 24 * 3600;

/**
 * Creates (or brings up to date) each endpoint's apply queue and its dead-letter queue, and the
 * outbox queues. createQueue leaves an existing queue untouched, so the apply policy is applied
 * with updateQueue. Outbox queues are only created if missing: their delivery policy belongs to
 * the relay.
 */
export async function ensureQueues(
  boss: PgBoss,
  endpoints: readonly string[],
  policy: RetryPolicy = DEFAULT_RETRY_POLICY,
): Promise<void> {
  for (const endpoint of endpoints) {
    const dead = deadLetterQueue(endpoint);
    // The dead-letter consumer settles the inbox row. If it cannot, the row would stay pending
    // with no job left, so it keeps trying for hours (backoff capped at 10 minutes).
    const deadOptions = {
      retryLimit: 50,
      retryDelay: 1,
      retryBackoff: true,
      retryDelayMax: 600,
      expireInSeconds: policy.expireInSeconds,
      retentionSeconds: DEAD_LETTER_RETENTION_SECONDS,
    };
    await boss.createQueue(dead, deadOptions);
    await boss.updateQueue(dead, deadOptions);
    const options = {
      retryLimit: policy.retryLimit,
      retryDelay: policy.retryDelaySeconds,
      retryBackoff: true,
      retryDelayMax: policy.retryDelayMaxSeconds,
      expireInSeconds: policy.expireInSeconds,
      // pg-boss deletes jobs still queued after this long; an inbox row whose job vanished would
      // wait for an operator, so queued apply jobs are kept far beyond any sane backlog.
      retentionSeconds: APPLY_RETENTION_SECONDS,
      deadLetter: dead,
    };
    await boss.createQueue(applyQueue(endpoint), options);
    await boss.updateQueue(applyQueue(endpoint), options);
  }
  for (const kind of OUTBOX_KINDS) {
    const name = outboxQueue(kind);
    if (!(await boss.getQueue(name))) {
      await boss.createQueue(name, { retryLimit: 10, retryDelay: 2, retryBackoff: true, retryDelayMax: 600 });
    }
  }
}
