import type pg from 'pg';
import { z } from 'zod';
import { type AttemptRow, attemptsOf } from '../../core/attempts/attempts.ts';
import { type AuditRow, actionsOnEvent } from '../../core/audit/audit.ts';
import { type EventDestination, eventDestinations } from '../../core/destinations/actions.ts';
import { HookgateError } from '../../core/errors.ts';
import { INDENTED_DEPTH, jsonDepth, jsonText } from '../../core/json-text.ts';
import { describeVersion } from '../../core/providers/version.ts';
import { APPLY_JOB_TIMES, type ApplyJobTimes } from '../../core/queue/job-rows.ts';
import { applyQueue, jobIdFor } from '../../core/queue/names.ts';
import {
  LIST_EVENTS,
  type ListedEvent,
  SHOW_EVENT,
  type ShownEvent,
} from '../../core/read-models/events-sql.ts';
import { withCommandPool } from '../database.ts';
import { checkEndpointFilter } from '../support/endpoints.ts';
import { eventFilterShape, filterParams } from '../support/filters.ts';
import { age, printJson, table } from '../support/format.ts';
import { commandConfig, endpointName, requireEndpoint } from '../support/options.ts';
import { terminalText, writeErr, writeOut } from '../support/terminal-text.ts';

export const eventsListOptionsSchema = z.strictObject({
  ...eventFilterShape,
  limit: z.coerce.number().int().min(1).max(10_000).default(50),
  json: z.boolean().optional(),
  config: z.string().min(1).optional(),
});

const oneLine = (text: string | null, max: number) => {
  if (!text) return '-';
  const flat = text.replace(/\s+/g, ' ');
  return flat.length > max ? `${flat.slice(0, max - 1)}…` : flat;
};

/** `hookgate events list`: inbox rows by the shared filters, newest first. */
export async function eventsListCommand(raw: unknown): Promise<void> {
  const options = eventsListOptionsSchema.parse(raw);
  const config = commandConfig(options.config, false);
  // Against the configuration before any connection: a typo is a usage error even with the database down.
  if (config && options.endpoint !== undefined) requireEndpoint(config, options.endpoint);
  await withCommandPool('events', 30_000, async (pool) => {
    await checkEndpointFilter(pool, config, options.endpoint);
    const params = filterParams({ ...options, eventIds: options.eventId ? [options.eventId] : undefined });
    const result = await pool.query<ListedEvent>(LIST_EVENTS, [...params, options.limit]);
    if (options.json) {
      printJson(result.rows.map(({ age_seconds: _age, ...row }) => row));
      return;
    }
    if (result.rows.length === 0) {
      writeErr('No event matches these filters.\n');
      return;
    }
    const rows = result.rows.map((row) => [
      row.endpoint,
      row.event_id,
      row.event_type,
      row.status,
      String(row.attempts),
      age(row.age_seconds),
      oneLine(row.last_error, 60),
    ]);
    writeOut(table(['ENDPOINT', 'EVENT ID', 'TYPE', 'STATUS', 'ATTEMPTS', 'AGE', 'LAST ERROR'], rows));
    if (result.rows.length === options.limit) writeErr(`(first ${options.limit}; --limit shows more)\n`);
  });
}

export const eventsShowOptionsSchema = z.strictObject({
  eventId: z.string().min(1).max(512),
  endpoint: endpointName,
  json: z.boolean().optional(),
  config: z.string().min(1).optional(),
});

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
 * are listed apart (destinationLines).
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
  // The operator actions that named this event (hookgate.audit): who, and why when they said.
  for (const action of actions) {
    entries.push({
      at: action.at,
      what: `${ACTION_VERBS[action.command] ?? action.command} by ${action.actor}${action.reason ? `: ${action.reason}` : ''}`,
    });
  }
  // The requeue (or a settled duplicate under `dedupe: observe`) that gave the event a fresh
  // budget of attempts; its time is known while its job is the current one.
  const requeuedNow = event.requeued_attempts > 0 && event.requeued_attempts === event.dispatched_attempts;
  if (event.requeued_attempts > 0) {
    entries.push({
      at: requeuedNow && job && job.created_on > event.received_at ? job.created_on : null,
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
  } else if (event.status === 'pending' && event.attempts > 0) {
    // A failed attempt was sent again in a new job, waiting for its backoff.
    entries.push({
      at: event.next_attempt_at,
      what: `attempt ${event.attempts + 1} due (attempt ${event.attempts} failed${lastError})`,
    });
  }
  if (event.processed_at) {
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

async function loadEvent(pool: pg.Pool, endpoint: string, eventId: string) {
  const found = await pool.query<ShownEvent>(SHOW_EVENT, [endpoint, eventId]);
  const event = found.rows[0];
  if (!event) {
    throw new HookgateError('event_unknown', `No event "${eventId}" on endpoint ${endpoint}.`);
  }
  // Rows claimed before dispatch jobs existed name none: theirs was the one derived from the event.
  const jobId = event.dispatch_job ?? jobIdFor(endpoint, eventId);
  const job =
    (await pool.query<ApplyJobTimes>(APPLY_JOB_TIMES, [applyQueue(endpoint), jobId])).rows[0] ?? null;
  const actions = await actionsOnEvent(pool, endpoint, eventId);
  const attempts = await attemptsOf(pool, endpoint, eventId);
  return { event, job, actions, attempts };
}

/** Each destination's filter decision and delivery (docs/destinations.md); nothing without destinations. */
function destinationLines(destinations: readonly EventDestination[]): string[] {
  if (destinations.length === 0) return [];
  const width = Math.max(...destinations.map((d) => d.destination.length));
  return [
    '',
    'destinations',
    ...destinations.map((d) => {
      const decision =
        d.matches === null
          ? 'no longer configured'
          : d.routedBy === 'handler'
            ? d.matches
              ? 'routed by the handler'
              : 'not routed here by the handler'
            : d.matches
              ? 'matches'
              : `filtered out (${d.reason})`;
      const delivery = d.delivery
        ? `; delivery ${d.delivery.id} ${d.delivery.status}, ${d.delivery.attempts} attempt(s)`
        : d.matches
          ? '; no delivery (the event was not processed, or it was applied before this destination existed)'
          : '';
      return `  ${d.destination.padEnd(width)}  ${decision}${delivery}`;
    }),
  ];
}

/** The payload as printed: any depth (json-text.ts), saying so when it is deeper than is indented. */
function payloadLines(payload: unknown): string[] {
  const depth = jsonDepth(payload);
  return [
    ...(depth > INDENTED_DEPTH
      ? [`(nested ${depth} levels deep: levels past ${INDENTED_DEPTH} are printed on one line)`]
      : []),
    ...jsonText(payload).split('\n'),
  ];
}

/** `hookgate events show`: everything about one event an operator needs to decide on it. */
export async function eventsShowCommand(raw: unknown): Promise<void> {
  const options = eventsShowOptionsSchema.parse(raw);
  const config = commandConfig(options.config, false);
  // Against the configuration before any connection: a typo is a usage error even with the database down.
  if (config && options.endpoint !== undefined) requireEndpoint(config, options.endpoint);
  await withCommandPool('events', 30_000, async (pool) => {
    await checkEndpointFilter(pool, config, options.endpoint);
    const { event, job, actions, attempts } = await loadEvent(pool, options.endpoint, options.eventId);
    const events = timeline(event, job, actions, attempts);
    const destinations = await eventDestinations(pool, config, {
      endpoint: event.endpoint,
      eventId: event.event_id,
      eventType: event.event_type,
      payload: event.payload,
    });
    if (options.json) {
      printJson({ ...event, destinations, attempt_history: attempts, timeline: events });
      return;
    }
    const lines = [
      `event      ${event.event_id}`,
      `endpoint   ${event.endpoint} (${event.provider})`,
      `type       ${event.event_type}`,
      `entity     ${event.entity_type ?? '-'} ${event.entity_id ?? '-'}${event.entity_version ? ` ${describeVersion(event.entity_version)}` : ''}`,
      `status     ${event.status}`,
      `attempts   ${event.attempts}${event.requeued_attempts ? ` (${event.requeued_attempts} before the last requeue)` : ''}`,
      `last error ${event.last_error ?? '-'}`,
      ...(event.discarded_at
        ? [`discarded  ${event.discarded_at.toISOString()} by ${event.discarded_by}: ${event.discard_reason}`]
        : []),
      `trace      ${event.traceparent ?? '-'}`,
      '',
      'timeline',
      ...events.map((entry) => `  ${(entry.at ?? '(time not kept)').padEnd(24)}  ${entry.what}`),
      ...destinationLines(destinations),
      '',
      'headers',
      ...Object.entries(event.headers).map(([name, value]) => `  ${name}: ${value}`),
      '',
      'payload',
      ...payloadLines(event.payload),
    ];
    // Line by line: a newline inside a field (a last error, a type) is printed as \n.
    writeOut(`${lines.map(terminalText).join('\n')}\n`);
  });
}
