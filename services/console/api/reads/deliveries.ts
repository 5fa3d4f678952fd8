import type { Request, Response } from 'express';
import { z } from 'zod';
import { listDeliveries, showDelivery } from '../../../core/destinations/actions.ts';
import type { DeliveryRow } from '../../../core/read-models/destinations-sql.ts';
import type { ApiContext } from '../context.ts';
import { requireEndpoint } from '../lookups.ts';
import {
  cursor,
  decodeCursor,
  destinationName,
  encodeCursor,
  endpointName,
  iso,
  limit,
  numericId,
  parseInput,
  pointInTime,
  queryOf,
} from '../params.ts';
import type { components } from '../schema.ts';
import { deliveryEtag } from '../states.ts';

type Schemas = components['schemas'];

export function deliveryOf(row: DeliveryRow): Schemas['Delivery'] {
  return {
    id: row.id,
    endpoint: row.endpoint,
    destination: row.destination,
    event_id: row.event_id,
    event_type: row.event_type,
    webhook_id: row.webhook_id,
    status: row.status as Schemas['DeliveryStatus'],
    attempts: row.attempts,
    http_status: row.http_status,
    last_error: row.last_error,
    created_at: iso(row.created_at),
    last_attempt_at: iso(row.last_attempt_at),
    next_attempt_at: iso(row.next_attempt_at),
    settled_at: iso(row.settled_at),
  };
}

const deliveriesQuery = (now: () => number) =>
  z.strictObject({
    endpoint: endpointName.optional(),
    destination: destinationName.optional(),
    status: z.enum(['pending', 'sending', 'retrying', 'held', 'delivered', 'dead']).optional(),
    since: pointInTime(now).optional(),
    limit,
    cursor: cursor.optional(),
  });

/** The deliveries list's cursor: the last id shown (ids only grow: newest first is id order). */
const deliveriesCursor = z.strictObject({ before: numericId });

/** GET /deliveries: `hookgate deliveries list`, newest first, in keyset pages by id. */
export async function listDeliveriesRoute(context: ApiContext, req: Request, res: Response): Promise<void> {
  const query = parseInput(deliveriesQuery(context.now), queryOf(req.query), 'query parameter');
  if (query.endpoint !== undefined) requireEndpoint(context.endpoints, query.endpoint);
  const before = query.cursor === undefined ? undefined : decodeCursor(deliveriesCursor, query.cursor).before;
  const rows = await listDeliveries(context.pool, {
    endpoint: query.endpoint,
    destination: query.destination,
    status: query.status,
    since: query.since,
    beforeId: before,
    limit: query.limit + 1,
  });
  const shown = rows.slice(0, query.limit);
  const body: Schemas['DeliveryPage'] = {
    items: shown.map(deliveryOf),
    next_cursor: rows.length > query.limit ? encodeCursor({ before: shown.at(-1)!.id }) : null,
  };
  res.json(body);
}

/** GET /deliveries/{delivery_id}: `hookgate deliveries show`, with the delivery's entity tag. */
export async function getDelivery(context: ApiContext, req: Request, res: Response): Promise<void> {
  const id = parseInput(numericId, req.params.delivery_id, 'path parameter');
  const { delivery, attempts } = await showDelivery(context.pool, id);
  const etag = deliveryEtag(delivery);
  const body: Schemas['DeliveryDetail'] = {
    delivery: deliveryOf(delivery),
    attempt_history: attempts.map((attempt) => ({
      attempt: attempt.attempt,
      started_at: iso(attempt.started_at),
      duration_ms: attempt.duration_ms,
      http_status: attempt.http_status,
      error: attempt.error,
      response_head: attempt.response_head,
    })),
    etag,
  };
  res.setHeader('ETag', etag);
  res.json(body);
}
