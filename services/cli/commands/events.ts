import { z } from 'zod';
import { type EventDestination, eventDestinations } from '../../core/destinations/actions.ts';
import { INDENTED_DEPTH, jsonDepth, jsonText } from '../../core/json-text.ts';
import { describeVersion } from '../../core/providers/version.ts';
import { loadEvent, timeline } from '../../core/read-models/event-detail.ts';
import { LIST_EVENTS, type ListedEvent } from '../../core/read-models/events-sql.ts';
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
