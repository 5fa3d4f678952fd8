import type { PgBoss } from 'pg-boss';
import type { Config } from '../config/schema.ts';
import { applyQueue, outboxDeadLetterQueue, outboxQueue } from './names.ts';

/** How pg-boss retries an apply job; attempts = retryLimit + 1. */
export interface RetryPolicy {
  readonly retryLimit: number;
  readonly retryDelaySeconds: number;
  readonly retryDelayMaxSeconds: number;
  /** A job still active after this long is taken to be lost and retried (a counted attempt). */
  readonly expireInSeconds: number;
  /** Finished apply jobs are deleted this long after. */
  readonly deleteAfterSeconds: number;
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

/** Outbox kinds whose queues always exist, so a handler can enqueue to them in any transaction. */
export const OUTBOX_KINDS = ['forward', 'notify'] as const;

/** How pg-boss retries an outbox (downstream delivery) job: the `relay` section of the config. */
export interface OutboxQueueSettings {
  /** Retries after the first attempt (a job gets retryLimit + 1 tries). */
  readonly retryLimit: number;
  /** Seconds before the first retry; doubled per retry (with jitter) when backoff is on. */
  readonly retryDelaySeconds: number;
  readonly retryBackoff: boolean;
  readonly retryDelayMaxSeconds: number;
  /** A job active longer than this is retried; above the longest request timeout. */
  readonly expireInSeconds: number;
  /** Finished outbox jobs are deleted this long after they finished (default 30 minutes). */
  readonly deleteAfterSeconds?: number;
  /** Dead-lettered outbox jobs (never consumed) are deleted this long after they were dead-lettered (default 30 days). */
  readonly deadLetterRetentionSeconds?: number;
  /**
   * A job whose heartbeat (refreshed by the relay's pg-boss workers while a request runs) is older
   * than this is retried: a dead worker's deliveries come back without waiting for expireIn.
   * Absent or null: none.
   */
  readonly heartbeatSeconds?: number | null;
}

/** The `relay` section of the config as pg-boss queue options (whole seconds). */
export function outboxPolicyFrom(relay: Config['relay']): OutboxQueueSettings {
  return {
    retryLimit: relay.retryLimit,
    retryDelaySeconds: Math.ceil(relay.retryDelay / 1000),
    retryBackoff: true,
    retryDelayMaxSeconds: Math.ceil(relay.retryDelayMax / 1000),
    expireInSeconds: Math.ceil(relay.expireIn / 1000),
    deleteAfterSeconds: Math.max(1, Math.round(relay.completedJobRetention / 1000)),
    deadLetterRetentionSeconds: Math.max(1, Math.round(relay.deadJobRetention / 1000)),
    heartbeatSeconds: Math.max(10, Math.round(relay.heartbeat / 1000)),
  };
}

/** The config's defaults (a test holds them equal to `outboxPolicyFrom` of a default config). */
export const DEFAULT_OUTBOX_QUEUE_SETTINGS = {
  retryLimit: 10,
  retryDelaySeconds: 5,
  retryBackoff: true,
  retryDelayMaxSeconds: 900,
  expireInSeconds: 300,
  deleteAfterSeconds: 1_800,
  deadLetterRetentionSeconds: 30 * 86_400,
  heartbeatSeconds: 10,
} as const satisfies Required<OutboxQueueSettings>;

/**
 * Creates the outbox queues and their dead-letter queues and brings their policy up to date
 * (updateQueue: whichever process created a queue first, gateway or worker, the policy is this
 * one). Must run before any handler's transaction sends to them.
 */
export async function ensureOutboxQueues(
  boss: PgBoss,
  settings: OutboxQueueSettings = DEFAULT_OUTBOX_QUEUE_SETTINGS,
  kinds: readonly string[] = OUTBOX_KINDS,
): Promise<void> {
  for (const kind of kinds) {
    const dead = outboxDeadLetterQueue(kind);
    // Nothing consumes these: a dead-lettered job stays queued until retentionSeconds.
    const deadSeconds =
      settings.deadLetterRetentionSeconds ?? DEFAULT_OUTBOX_QUEUE_SETTINGS.deadLetterRetentionSeconds;
    const deadOptions = { retentionSeconds: deadSeconds, deleteAfterSeconds: deadSeconds };
    await boss.createQueue(dead, deadOptions);
    await boss.updateQueue(dead, deadOptions);
    const options = {
      retryLimit: settings.retryLimit,
      retryDelay: settings.retryDelaySeconds,
      retryBackoff: settings.retryBackoff,
      expireInSeconds: settings.expireInSeconds,
      // outbox_deliveries, not the job, is the record of what was delivered.
      deleteAfterSeconds: settings.deleteAfterSeconds ?? DEFAULT_OUTBOX_QUEUE_SETTINGS.deleteAfterSeconds,
    };
    const retryDelayMax = settings.retryBackoff ? settings.retryDelayMaxSeconds : undefined;
    const heartbeat = settings.heartbeatSeconds ?? null;
    await boss.createQueue(outboxQueue(kind), {
      ...options,
      ...(retryDelayMax === undefined ? {} : { retryDelayMax }),
      ...(heartbeat === null ? {} : { heartbeatSeconds: heartbeat }),
      deadLetter: dead,
    });
    await boss.updateQueue(outboxQueue(kind), {
      ...options,
      retryDelayMax: retryDelayMax ?? null,
      heartbeatSeconds: heartbeat,
      deadLetter: dead,
    });
  }
}

/**
 * Creates (or brings up to date) each endpoint's apply queue, and the outbox queues. createQueue
 * leaves an existing queue untouched, so each policy is applied with updateQueue. Gateway, worker
 * and CLI all call this, with the policies from the same config.
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
  outbox: OutboxQueueSettings = DEFAULT_OUTBOX_QUEUE_SETTINGS,
): Promise<void> {
  await ensureApplyQueues(boss, endpoints, policy);
  await ensureOutboxQueues(boss, outbox);
}

/** The apply queues alone (see ensureQueues). */
export async function ensureApplyQueues(
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
    // A queue made before keeps its options until updated: the configuration may have changed.
    await boss.updateQueue(applyQueue(endpoint), { ...options, heartbeatSeconds: heartbeat });
  }
}
