import type pg from 'pg';
import type { PgBoss } from 'pg-boss';
import { failureFromOutput, lastErrorOf, PARKING_CODE } from '../core/apply/failure.ts';
import { executorFor } from '../core/db/executor.ts';
import { withTransaction } from '../core/db/transaction.ts';
import {
  attemptsOf,
  type Ended,
  lockForSettling,
  type SettlingRow,
  settleEnded,
} from '../core/inbox/rows.ts';
import type { Logger } from '../core/logging.ts';
import { eventsWithLiveJobs } from '../core/queue/apply-jobs.ts';
import { deadLetterQueue } from '../core/queue/names.ts';
import { traceIdOf } from '../core/tracing.ts';

/** A dead-lettered apply job: the source job's last attempt and how it ended. */
export interface DeadLetterJob {
  readonly id: string;
  readonly retryCount: number;
  readonly eventId: string;
  /** Retries the source job used; its attempts were this + 1. */
  readonly sourceRetryCount: number;
  /** The source job's last output: what `fail` recorded, or pg-boss's expiry message. */
  readonly sourceOutput: unknown;
}

export interface Exhausted extends Ended {
  /** For metrics and logs (set by settleDeadLetters). */
  readonly eventType?: string;
  readonly traceparent?: string | null;
}

const EXPIRED =
  'attempt_expired: an attempt did not finish within worker.expireIn or stopped refreshing its heartbeat (the worker crashed, was killed or stalled)';

/**
 * How an event that ran out of attempts settles, decided from the failure its last attempt
 * reported to pg-boss (the code in the job's output), never from the row's `last_error` text,
 * which a separate statement writes on the batch-failure path and may be stale:
 * `entity_not_yet_known` parks, any other code is dead. When the last attempt never reported
 * (the process died or stalled past expireIn), pg-boss expired it: that is dead, whatever
 * earlier attempts said.
 */
export function exhaustedStatus(row: SettlingRow, job: DeadLetterJob): Exhausted {
  const attempts = attemptsOf(row.requeued_attempts, job.sourceRetryCount);
  const reported = failureFromOutput(job.sourceOutput);
  if (reported) {
    return {
      eventId: row.event_id,
      status: reported.code === PARKING_CODE ? 'parked' : 'dead',
      attempts,
      lastError: lastErrorOf(reported),
    };
  }
  return {
    eventId: row.event_id,
    status: 'dead',
    attempts,
    lastError: (row.last_error ? `${EXPIRED}; earlier: ${row.last_error}` : EXPIRED).slice(0, 2_000),
  };
}

export interface DeadLetterDeps {
  readonly pool: pg.Pool;
  readonly boss: PgBoss;
  readonly logger: Logger;
}

/**
 * Settles dead-lettered events as `parked` or `dead` and completes their dead-letter jobs in one
 * transaction. Rows no longer pending (a stalled attempt committed after all, or an operator
 * acted) are left as they are, and so are rows dispatched again since (a live apply job under
 * the event's id): that job applies the event or ends in a dead letter of its own.
 */
export async function settleDeadLetters(
  deps: DeadLetterDeps,
  endpoint: string,
  jobs: readonly DeadLetterJob[],
): Promise<Exhausted[]> {
  const exhausted = await withTransaction(deps.pool, async (client) => {
    const rows = await lockForSettling(
      client,
      endpoint,
      jobs.map((job) => job.eventId),
    );
    const byEvent = new Map(rows.map((row) => [row.event_id, row]));
    const redispatched = await eventsWithLiveJobs(
      client,
      endpoint,
      rows.filter((row) => row.status === 'pending').map((row) => row.event_id),
    );
    const settled: Exhausted[] = [];
    const seen = new Set<string>();
    for (const job of jobs) {
      const row = byEvent.get(job.eventId);
      if (row?.status !== 'pending' || redispatched.has(job.eventId) || seen.has(job.eventId)) continue;
      seen.add(job.eventId);
      settled.push({
        ...exhaustedStatus(row, job),
        eventType: row.event_type,
        traceparent: row.traceparent,
      });
    }
    await settleEnded(client, endpoint, settled);
    await deps.boss.complete(
      deadLetterQueue(endpoint),
      jobs.map(({ id, retryCount }) => ({ id, retryCount })),
      null,
      { db: executorFor(client) },
    );
    return settled;
  });
  for (const e of exhausted) {
    deps.logger.warn(
      {
        endpoint,
        event_id: e.eventId,
        event_type: e.eventType,
        outcome: e.status,
        attempts: e.attempts,
        last_error: e.lastError,
        trace_id: traceIdOf(e.traceparent),
      },
      'event ran out of attempts',
    );
  }
  return exhausted;
}
