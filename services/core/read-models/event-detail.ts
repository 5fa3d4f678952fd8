import type pg from 'pg';
import { type AttemptRow, attemptsOf } from '../attempts/attempts.ts';
import { type AuditRow, actionsOnEvent } from '../audit/audit.ts';
import { HookgateError } from '../errors.ts';
import { APPLY_JOB_TIMES, type ApplyJobTimes } from '../queue/job-rows.ts';
import { applyQueue, jobIdFor } from '../queue/names.ts';
import { SHOW_EVENT, type ShownEvent } from './events-sql.ts';

// One event in full, as `hookgate events show` and the API's GET /events/{endpoint}/{id} give it:
// the inbox row, the records around it, and the timeline told from them.

/** How an audited action reads in a timeline. */
const ACTION_VERBS: Readonly<Record<string, string>> = {
  requeue: 'requeued',
  discard: 'discarded',
  redeliver: 'redelivered',
};

export interface TimelineEntry {
  /** Null when hookgate keeps the fact but not its time (the job is gone: retention). */
  at: string | null;
  what: string;
}

/**
 * Every state change hookgate knows of, oldest first: from the inbox row (received, attempts,
 * last error, requeued, settled) and, while pg-boss keeps it, the event's apply job (the times of
 * the requeue, of the latest attempt, of the next one and of the end). Deliveries to destinations
 * are listed apart.
 */
export function timeline(
  event: ShownEvent,
  job: ApplyJobTimes | null,
  actions: readonly Pick<AuditRow, 'at' | 'actor' | 'command' | 'reason'>[] = [],
  attempts: readonly AttemptRow[] = [],
): TimelineEntry[] {
  const entries: { at: Date | null; what: string }[] = [
    { at: event.received_at, what: `received${event.received_via ? ` (${event.received_via})` : ''}` },
  ];
  // The latest requeue the audit trail has: the one that gave the event its fresh budget of
  // attempts, so the budget is told there, at its time, not apart as a time not kept.
  const lastRequeue = actions.filter((action) => action.command === 'requeue').at(-1);
  // The requeue's own time is its job's while that job is the current one (the audit row is
  // written just after the requeue commits, a worker may start before it).
  const requeuedNow = event.requeued_attempts > 0 && event.requeued_attempts === event.dispatched_attempts;
  const requeueJobAt = requeuedNow && job && job.created_on > event.received_at ? job.created_on : null;
  // The operator actions that named this event (hookgate.audit): who, and why when they said.
  for (const action of actions) {
    const budget =
      action === lastRequeue && event.requeued_attempts > 0
        ? ` after ${event.requeued_attempts} attempt(s), with a fresh job`
        : '';
    entries.push({
      at: budget ? (requeueJobAt ?? action.at) : action.at,
      what: `${ACTION_VERBS[action.command] ?? action.command} by ${action.actor}${budget}${action.reason ? `: ${action.reason}` : ''}`,
    });
  }
  // A requeue the audit trail does not have (a settled duplicate under `dedupe: observe`, or an
  // audit row pruned): its time is known while its job is the current one.
  if (event.requeued_attempts > 0 && lastRequeue === undefined) {
    entries.push({
      at: requeueJobAt,
      what: `requeued after ${event.requeued_attempts} attempt(s), with a fresh job`,
    });
  }
  const lastError = event.last_error ? `: ${event.last_error}` : '';
  // Each attempt the history keeps (hookgate.apply_attempts): when, which worker, how it ended.
  for (const attempt of attempts) {
    const error = attempt.error_code ? `, ${attempt.error_code}: ${attempt.error_message ?? ''}` : '';
    entries.push({
      at: attempt.at,
      what: `attempt ${attempt.attempt} by ${attempt.worker}: ${attempt.outcome}${error} (${Math.round(attempt.duration_ms)} ms)`,
    });
  }
  const recorded = new Set(attempts.map((attempt) => attempt.attempt));
  if (job?.started_on) {
    const attempt = event.dispatched_attempts + job.retry_count + 1;
    // An attempt the history has is shown from there; one it has not (running now, or lost with
    // its worker) from the job.
    if (!recorded.has(attempt)) entries.push({ at: job.started_on, what: `attempt ${attempt} started` });
    if (job.state === 'retry')
      entries.push({
        at: job.start_after,
        what: `attempt ${attempt + 1} due (attempt ${attempt} failed${lastError})`,
      });
    if (job.state === 'active') entries.push({ at: null, what: `attempt ${attempt} is running now` });
  } else if (event.status === 'pending' && event.attempts > event.requeued_attempts) {
    // A failed attempt was sent again in a new job, waiting for its backoff (a requeued event not
    // tried since waits for its first fresh attempt, not for a retry).
    entries.push({
      at: event.next_attempt_at,
      what: `attempt ${event.attempts + 1} due (attempt ${event.attempts} failed${lastError})`,
    });
  }
  if (event.processed_at) {
    // A discarded event had ended parked or dead first: its last recorded attempt says how and when.
    const ended = attempts.at(-1);
    if (event.status === 'discarded' && ended && (ended.outcome === 'dead' || ended.outcome === 'parked')) {
      entries.push({
        at: ended.at,
        what: `ended ${ended.outcome} after ${ended.attempt} attempt(s)${lastError}`,
      });
    }
    entries.push({
      at: event.processed_at,
      what: `settled ${event.status} after ${event.attempts} attempt(s)`,
    });
  } else if (event.status === 'parked' || event.status === 'dead') {
    // The job ends (failed, or completed for a failure retrying cannot fix) as the row does.
    const ended = job?.completed_on && (job.state === 'failed' || job.state === 'completed');
    entries.push({
      at: ended ? job.completed_on : null,
      what: `ended ${event.status} after ${event.attempts} attempt(s)${lastError}`,
    });
  }
  // An entry without a time stays after the one before it (the order the facts happened in).
  let previous = event.received_at.getTime();
  const keyed = entries.map((entry, index) => {
    if (entry.at) previous = entry.at.getTime();
    return { entry, key: entry.at ? entry.at.getTime() : previous, index };
  });
  return keyed
    .sort((a, b) => a.key - b.key || a.index - b.index)
    .map(({ entry }) => ({ at: entry.at ? entry.at.toISOString() : null, what: entry.what }));
}

/** The inbox row of one event (a primary-key look-up); `event_unknown` when there is none. */
export async function readEvent(pool: pg.Pool, endpoint: string, eventId: string): Promise<ShownEvent> {
  const event = (await pool.query<ShownEvent>(SHOW_EVENT, [endpoint, eventId])).rows[0];
  if (!event) {
    throw new HookgateError('event_unknown', `No event "${eventId}" on endpoint ${endpoint}.`);
  }
  return event;
}

/** One event and every record of it `events show` prints (its job, actions, attempts). */
export async function loadEvent(pool: pg.Pool, endpoint: string, eventId: string) {
  const event = await readEvent(pool, endpoint, eventId);
  // Rows claimed before dispatch jobs existed name none: theirs was the one derived from the event.
  const jobId = event.dispatch_job ?? jobIdFor(endpoint, eventId);
  const job =
    (await pool.query<ApplyJobTimes>(APPLY_JOB_TIMES, [applyQueue(endpoint), jobId])).rows[0] ?? null;
  const actions = await actionsOnEvent(pool, endpoint, eventId);
  const attempts = await attemptsOf(pool, endpoint, eventId);
  return { event, job, actions, attempts };
}
