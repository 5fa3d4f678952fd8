import type { Request, Response } from 'express';
import { z } from 'zod';
import { eventDestinations } from '../../../core/destinations/actions.ts';
import { INBOX_STATUSES } from '../../../core/inbox/status.ts';
import { loadEvent, timeline } from '../../../core/read-models/event-detail.ts';
import {
  decodeCursor as decodeEventCursor,
  encodeCursor as encodeEventCursor,
} from '../../pages/events-query.ts';
import { searchEvents } from '../../read-models/events.ts';
import type { ApiContext } from '../context.ts';
import { requireEndpoint } from '../lookups.ts';
import { cursor, endpointName, iso, limit, parseInput, pointInTime, queryOf } from '../params.ts';
import { ApiProblem } from '../problems.ts';
import type { components } from '../schema.ts';
import { eventEtag } from '../states.ts';
import { auditEntry } from './audit.ts';
import { deliveryOf } from './deliveries.ts';

type Schemas = components['schemas'];

const eventsQuery = (now: () => number) =>
  z.strictObject({
    endpoint: endpointName.optional(),
    status: z.enum(INBOX_STATUSES).optional(),
    type: z.string().min(1).max(500).optional(),
    since: pointInTime(now).optional(),
    until: pointInTime(now).optional(),
    event_id: z.string().min(1).max(512).optional(),
    entity_id: z.string().min(1).max(500).optional(),
    limit,
    cursor: cursor.optional(),
  });

/**
 * GET /events: the console's keyset search (services/console/read-models/events.ts), which reads
 * the inbox through one index and at most console.scanRows rows per page, with `hookgate events
 * list`'s filters. The cursor is the console's (the last row read: time, endpoint, id).
 */
export async function listEvents(context: ApiContext, req: Request, res: Response): Promise<void> {
  const query = parseInput(eventsQuery(context.now), queryOf(req.query), 'query parameter');
  if (query.endpoint !== undefined) requireEndpoint(context.endpoints, query.endpoint);
  const after = query.cursor === undefined ? undefined : decodeEventCursor(query.cursor);
  if (after === null)
    throw new ApiProblem(
      'usage_invalid',
      'query parameter cursor is not one this list gave: pass a next_cursor back as it came.',
    );
  const page = await searchEvents(
    context.pool,
    {
      endpoint: query.endpoint,
      status: query.status,
      type: query.type,
      since: query.since,
      until: query.until,
      eventId: query.event_id,
      entityId: query.entity_id,
      after,
    },
    context.endpoints,
    { pageSize: query.limit, scanRows: context.limits.scanRows },
  );
  const body: Schemas['EventPage'] = {
    items: page.rows.map((row) => ({
      endpoint: row.endpoint,
      event_id: row.event_id,
      event_type: row.event_type,
      status: row.status,
      attempts: row.attempts,
      received_at: row.received_key,
      processed_at: iso(row.processed_at),
      last_error: row.last_error,
      entity_id: row.entity_id,
      received_via: row.received_via,
    })),
    next_cursor: page.next ? encodeEventCursor(page.next) : null,
    read_back_to: iso(page.readBackTo),
  };
  res.json(body);
}

/** GET /events/{endpoint}/{event_id}: `hookgate events show --json`, with the event's entity tag. */
export async function getEvent(context: ApiContext, req: Request, res: Response): Promise<void> {
  const endpoint = requireEndpoint(context.endpoints, String(req.params.endpoint));
  const eventId = parseInput(z.string().min(1).max(512), req.params.event_id, 'path parameter');
  const { event, job, actions, attempts } = await loadEvent(context.pool, endpoint, eventId);
  const destinations = await eventDestinations(context.pool, context.config, {
    endpoint,
    eventId,
    eventType: event.event_type,
    payload: event.payload,
  });
  const etag = eventEtag(event);
  const body: Schemas['EventDetail'] = {
    endpoint: event.endpoint,
    event_id: event.event_id,
    provider: event.provider,
    event_type: event.event_type,
    entity_type: event.entity_type,
    entity_id: event.entity_id,
    entity_version: event.entity_version,
    status: event.status as Schemas['EventStatus'],
    attempts: event.attempts,
    requeued_attempts: event.requeued_attempts,
    last_error: event.last_error,
    received_at: iso(event.received_at),
    processed_at: iso(event.processed_at),
    next_attempt_at: iso(event.next_attempt_at),
    received_via: event.received_via,
    traceparent: event.traceparent,
    discarded_at: iso(event.discarded_at),
    discarded_by: event.discarded_by,
    discard_reason: event.discard_reason,
    headers: event.headers,
    payload: event.payload,
    timeline: timeline(event, job, actions, attempts),
    attempt_history: attempts.map((attempt) => ({
      attempt: attempt.attempt,
      at: iso(attempt.at),
      worker: attempt.worker,
      outcome: attempt.outcome,
      error_code: attempt.error_code,
      error_message: attempt.error_message,
      duration_ms: attempt.duration_ms,
    })),
    destinations: destinations.map((destination) => ({
      destination: destination.destination,
      matches: destination.matches,
      reason: destination.reason ?? null,
      delivery: destination.delivery ? deliveryOf(destination.delivery) : null,
    })),
    actions: actions.map(auditEntry),
    etag,
  };
  res.setHeader('ETag', etag);
  res.json(body);
}
