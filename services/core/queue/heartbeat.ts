import type { PgBoss } from 'pg-boss';
import { z } from 'zod';

/** One fetched attempt: touch is fenced by it, as complete and fail are. */
export interface HeldJob {
  readonly id: string;
  readonly retryCount: number;
}

export interface Heartbeat {
  /** Stops refreshing; waits for a refresh in flight so none lands after the batch ended. */
  stop(): Promise<void>;
}

/** What pg-boss's touch() answers (typed as an empty interface there). */
const touchResponse = z.object({
  affected: z.number(),
  settled: z.array(z.string()).optional(),
});

/** A third of the queue's heartbeat: two refreshes may come late before the job is taken back. */
export function heartbeatRefreshMs(heartbeatSeconds: number): number {
  return (heartbeatSeconds * 1000) / 3;
}

export interface HeartbeatOptions {
  readonly boss: PgBoss;
  readonly queue: string;
  readonly jobs: readonly HeldJob[];
  /** Milliseconds between refreshes: a third of the queue's heartbeat, so one late refresh is not fatal. */
  readonly everyMs: number;
  /** Jobs this worker no longer holds (their heartbeat went stale and another attempt has them). */
  readonly onLost: (ids: readonly string[]) => void;
  /** A refresh that could not run says nothing about the claim; it is retried at the next tick. */
  readonly onError: (error: unknown) => void;
}

/**
 * Keeps fetched jobs' `heartbeat_on` fresh while a batch runs, from pg-boss's own pool (not the
 * batch's transaction, which commits only at the end). pg-boss's supervisor retries a job whose
 * heartbeat is older than the queue's `heartbeatSeconds`: a SIGKILLed worker's jobs go back to the
 * queue after that, instead of after `expireIn`, while a live worker's long batch keeps its jobs.
 * `work()` does this for its own handlers; hookgate fetches itself, so it refreshes itself.
 */
export function startHeartbeat(options: HeartbeatOptions): Heartbeat {
  const { boss, queue, jobs } = options;
  const attempts = jobs.map(({ id, retryCount }) => ({ id, retryCount }));
  let inFlight: Promise<void> | null = null;
  const refresh = async (): Promise<void> => {
    try {
      const answer = touchResponse.parse(await boss.touch(queue, attempts));
      if (answer.settled && answer.affected < attempts.length) {
        const touched = new Set(answer.settled);
        options.onLost(attempts.filter((job) => !touched.has(job.id)).map((job) => job.id));
      }
    } catch (error) {
      options.onError(error);
    }
  };
  const timer = setInterval(() => {
    if (inFlight) return;
    inFlight = refresh().finally(() => {
      inFlight = null;
    });
  }, options.everyMs);
  return {
    async stop() {
      clearInterval(timer);
      await inFlight;
    },
  };
}
