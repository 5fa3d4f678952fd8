import { randomUUID } from 'node:crypto';
import type pg from 'pg';
import type { PgBoss } from 'pg-boss';
import { executorFor } from '../db/executor.ts';
import { type ApplyJobData, applyQueue } from '../queue/names.ts';

// Dispatch: handing pending inbox rows to a worker. A job names the rows it carries; each row
// names the job that carries it now (`dispatch_job`), so a job only applies rows that are still
// its own. The claim writes its rows' first job in its own statement (inbox/claim-sql.ts);
// everything that sends rows again — a failed attempt's retry with a backoff, requeue, `dedupe:
// observe`, the sweeper — comes through here, in the caller's transaction.

/** Most events one job carries (the worker's default batch). */
export const EVENTS_PER_JOB = 100;

/** An event to send again, with the attempts it has made so far. */
export interface Redispatch {
  readonly eventId: string;
  readonly attempts: number;
  /**
   * Only if the row is still carried by this job (null: by none): the sweeper's compare-and-set,
   * so a row another dispatch has just taken is left to it. Undefined: whatever its job.
   */
  readonly fromJob?: string | null;
}

/**
 * The rows' dispatch, in one statement: the job that now carries them, their attempts so far and
 * when they may start. Only pending rows move (a row settled meanwhile is left alone).
 */
const DISPATCH_ROWS = `
  UPDATE hookgate.inbox i
     SET dispatch_job = $2::uuid,
         dispatched_attempts = CASE WHEN $9::boolean THEN i.dispatched_attempts ELSE u.attempts END,
         requeued_attempts = CASE WHEN $8::boolean THEN u.attempts ELSE i.requeued_attempts END,
         next_attempt_at = CASE WHEN $3::float8 > 0 THEN now() + make_interval(secs => $3::float8) END
    FROM unnest($4::text[], $5::int[], $6::boolean[], $7::uuid[]) AS u(event_id, attempts, checked, from_job)
   WHERE i.endpoint = $1 AND i.event_id = u.event_id AND i.status = 'pending'
     AND (NOT u.checked OR i.dispatch_job IS NOT DISTINCT FROM u.from_job)
  RETURNING i.event_id`;

export interface DispatchOptions {
  /** Seconds before the jobs may start (a failed attempt's backoff). */
  readonly delaySeconds?: number;
  /**
   * An operator's new start (requeue, an observe-mode duplicate): the event gets a full budget of
   * attempts again, counted from the attempts it has made. Otherwise (a retry, a sweep) its
   * budget goes on.
   */
  readonly restart?: boolean;
  /**
   * Leaves each row's attempts as they were (the `attempts` given are not used): events a worker
   * hands back unapplied, beyond what it applies in one batch, were charged nothing.
   */
  readonly keepAttempts?: boolean;
  /**
   * The jobs' own retry limit, for tries that never report (a lost worker, a batch whose
   * transaction failed): what the events have left of their budget, so that those tries cannot
   * carry them past it. Unset: the queue's.
   */
  readonly retryLimit?: number;
}

/**
 * Sends these pending events of one endpoint new jobs (up to EVENTS_PER_JOB each), in the
 * caller's transaction: the rows and their jobs commit together. Returns the events that were
 * dispatched (those still pending).
 */
export async function dispatchEvents(
  boss: PgBoss,
  client: pg.ClientBase,
  endpoint: string,
  events: readonly Redispatch[],
  options: DispatchOptions = {},
): Promise<string[]> {
  const delaySeconds = options.delaySeconds ?? 0;
  const dispatched: string[] = [];
  const db = executorFor(client);
  for (let start = 0; start < events.length; start += EVENTS_PER_JOB) {
    const chunk = events.slice(start, start + EVENTS_PER_JOB);
    const id = randomUUID();
    const moved = await client.query<{ event_id: string }>(DISPATCH_ROWS, [
      endpoint,
      id,
      delaySeconds,
      chunk.map((event) => event.eventId),
      chunk.map((event) => event.attempts),
      chunk.map((event) => event.fromJob !== undefined),
      chunk.map((event) => event.fromJob ?? null),
      options.restart ?? false,
      options.keepAttempts ?? false,
    ]);
    if (moved.rows.length === 0) continue;
    const eventIds = moved.rows.map((row) => row.event_id);
    const data: ApplyJobData = { endpoint, eventIds };
    await boss.insert(
      applyQueue(endpoint),
      [
        {
          id,
          data,
          ...(delaySeconds > 0 ? { startAfter: Math.ceil(delaySeconds) } : {}),
          ...(options.retryLimit === undefined ? {} : { retryLimit: Math.max(0, options.retryLimit) }),
        },
      ],
      { db },
    );
    dispatched.push(...eventIds);
  }
  return dispatched;
}
