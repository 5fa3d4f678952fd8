import type pg from 'pg';
import { z } from 'zod';
import { HookgateError } from '../../core/errors.ts';
import { OUTBOX_KINDS } from '../../core/queue/queues.ts';
import { withCommandPool } from '../database.ts';
import { checkEndpointFilter } from '../support/endpoints.ts';
import { eventFilterShape, FILTER_PREDICATE, filterParams } from '../support/filters.ts';
import { age, printJson, table } from '../support/format.ts';
import { commandConfig, endpointName } from '../support/options.ts';
import { terminalText, writeErr, writeOut } from '../support/terminal-text.ts';

export const eventsListOptionsSchema = z.strictObject({
  ...eventFilterShape,
  limit: z.coerce.number().int().min(1).max(10_000).default(50),
  json: z.boolean().optional(),
  config: z.string().min(1).optional(),
});

export const LIST_EVENTS = `
  SELECT endpoint, event_id, event_type, status, attempts, last_error, received_at, processed_at,
         received_via, EXTRACT(EPOCH FROM clock_timestamp() - received_at)::float8 AS age_seconds
    FROM hookgate.inbox
   WHERE ${FILTER_PREDICATE}
   ORDER BY received_at DESC, event_id
   LIMIT $7`;

interface ListedEvent {
  endpoint: string;
  event_id: string;
  event_type: string;
  status: string;
  attempts: number;
  last_error: string | null;
  received_at: Date;
  processed_at: Date | null;
  received_via: string | null;
  age_seconds: number;
}

const oneLine = (text: string | null, max: number) => {
  if (!text) return '-';
  const flat = text.replace(/\s+/g, ' ');
  return flat.length > max ? `${flat.slice(0, max - 1)}…` : flat;
};

/** `hookgate events list`: inbox rows by the shared filters, newest first. */
export async function eventsListCommand(raw: unknown): Promise<void> {
  const options = eventsListOptionsSchema.parse(raw);
  const config = commandConfig(options.config, false);
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

export const SHOW_EVENT = `
  SELECT endpoint, event_id, provider, event_type, entity_type, entity_id, entity_version::text AS entity_version,
         status, attempts, requeued_attempts, last_error, received_at, processed_at, received_via,
         traceparent, headers, payload
    FROM hookgate.inbox
   WHERE endpoint = $1 AND event_id = $2`;

/**
 * Downstream deliveries the event caused (the forward handler keys them endpoint:event_id), one
 * primary-key look-up per outbox kind ($2): by key alone the whole outbox was read.
 */
export const EVENT_DELIVERIES = `
  SELECT kind, url, status, attempts, http_status, last_error, first_attempt_at, last_attempt_at, settled_at
    FROM hookgate.outbox_deliveries
   WHERE kind = ANY ($2::text[]) AND key = $1
   ORDER BY kind`;

interface ShownEvent {
  endpoint: string;
  event_id: string;
  provider: string;
  event_type: string;
  entity_type: string | null;
  entity_id: string | null;
  entity_version: string | null;
  status: string;
  attempts: number;
  requeued_attempts: number;
  last_error: string | null;
  received_at: Date;
  processed_at: Date | null;
  received_via: string | null;
  traceparent: string | null;
  headers: Record<string, string>;
  payload: unknown;
}

interface Delivery {
  kind: string;
  url: string | null;
  status: string;
  attempts: number;
  http_status: number | null;
  last_error: string | null;
  first_attempt_at: Date;
  last_attempt_at: Date;
  settled_at: Date | null;
}

interface TimelineEntry {
  at: string;
  what: string;
}

export function timeline(event: ShownEvent, deliveries: readonly Delivery[]): TimelineEntry[] {
  const entries: { at: Date; what: string }[] = [
    { at: event.received_at, what: `received${event.received_via ? ` (${event.received_via})` : ''}` },
  ];
  if (event.processed_at) {
    entries.push({
      at: event.processed_at,
      what: `settled ${event.status} after ${event.attempts} attempt(s)`,
    });
  }
  for (const delivery of deliveries) {
    entries.push({
      at: delivery.first_attempt_at,
      what: `${delivery.kind}: first attempt to ${delivery.url ?? '(no URL)'}`,
    });
    if (delivery.settled_at)
      entries.push({
        at: delivery.settled_at,
        what: `${delivery.kind}: ${delivery.status}${delivery.http_status ? ` (HTTP ${delivery.http_status})` : ''} after ${delivery.attempts} attempt(s)`,
      });
    else
      entries.push({
        at: delivery.last_attempt_at,
        what: `${delivery.kind}: ${delivery.status} after ${delivery.attempts} attempt(s)${delivery.last_error ? `: ${delivery.last_error}` : ''}`,
      });
  }
  return entries
    .sort((a, b) => a.at.getTime() - b.at.getTime())
    .map((entry) => ({ at: entry.at.toISOString(), what: entry.what }));
}

async function loadEvent(pool: pg.Pool, endpoint: string, eventId: string) {
  const found = await pool.query<ShownEvent>(SHOW_EVENT, [endpoint, eventId]);
  const event = found.rows[0];
  if (!event) {
    throw new HookgateError('event_unknown', `No event "${eventId}" on endpoint ${endpoint}.`);
  }
  const deliveries = (await pool.query<Delivery>(EVENT_DELIVERIES, [`${endpoint}:${eventId}`, OUTBOX_KINDS]))
    .rows;
  return { event, deliveries };
}

/** `hookgate events show`: everything about one event an operator needs to decide on it. */
export async function eventsShowCommand(raw: unknown): Promise<void> {
  const options = eventsShowOptionsSchema.parse(raw);
  const config = commandConfig(options.config, false);
  await withCommandPool('events', 30_000, async (pool) => {
    await checkEndpointFilter(pool, config, options.endpoint);
    const { event, deliveries } = await loadEvent(pool, options.endpoint, options.eventId);
    const events = timeline(event, deliveries);
    if (options.json) {
      printJson({ ...event, deliveries, timeline: events });
      return;
    }
    const lines = [
      `event      ${event.event_id}`,
      `endpoint   ${event.endpoint} (${event.provider})`,
      `type       ${event.event_type}`,
      `entity     ${event.entity_type ?? '-'} ${event.entity_id ?? '-'}${event.entity_version ? ` v${event.entity_version}` : ''}`,
      `status     ${event.status}`,
      `attempts   ${event.attempts}${event.requeued_attempts ? ` (${event.requeued_attempts} before the last requeue)` : ''}`,
      `last error ${event.last_error ?? '-'}`,
      `trace      ${event.traceparent ?? '-'}`,
      '',
      'timeline',
      ...events.map((entry) => `  ${entry.at}  ${entry.what}`),
      '',
      'headers',
      ...Object.entries(event.headers).map(([name, value]) => `  ${name}: ${value}`),
      '',
      'payload',
      ...JSON.stringify(event.payload, null, 2).split('\n'),
    ];
    // Line by line: a newline inside a field (a last error, a type) is printed as \n.
    writeOut(`${lines.map(terminalText).join('\n')}\n`);
  });
}
