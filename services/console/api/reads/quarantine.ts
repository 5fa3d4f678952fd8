import type { Request, Response } from 'express';
import { z } from 'zod';
import { HookgateError } from '../../../core/errors.ts';
import { listHeldPage, type QuarantinedRow, showQuarantined } from '../../../core/quarantine/actions.ts';
import type { ApiContext } from '../context.ts';
import { requireEndpoint } from '../lookups.ts';
import {
  cursor,
  decodeCursor,
  encodeCursor,
  endpointName,
  iso,
  limit,
  numericId,
  parseInput,
  queryOf,
} from '../params.ts';
import type { components } from '../schema.ts';
import { quarantineEtag } from '../states.ts';

type Schemas = components['schemas'];

function summary(row: QuarantinedRow, receivedAt: string): Schemas['QuarantineSummary'] {
  return {
    id: row.id,
    endpoint: row.endpoint,
    received_at: receivedAt,
    reason: row.reason,
    message: row.message,
    body_bytes: row.body_bytes,
    state: row.released_at ? 'released' : row.dropped_at ? 'dropped' : 'held',
    settled_at: iso(row.released_at ?? row.dropped_at),
    settled_by: row.settled_by,
    settle_reason: row.settle_reason,
  };
}

const listQuery = z.strictObject({
  endpoint: endpointName.optional(),
  reason: z
    .string()
    .regex(/^[a-z_]{1,63}$/, 'is not a reason code')
    .optional(),
  limit,
  cursor: cursor.optional(),
});

/** The last row's receive time to the microsecond and its id (the console's `Older →` cursor). */
const pageCursor = z.strictObject({
  at: z.string().regex(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{1,6})?Z$/),
  id: numericId,
});

/** GET /quarantine: held deliveries newest first, the console's keyset pages (listHeldPage). */
export async function listQuarantine(context: ApiContext, req: Request, res: Response): Promise<void> {
  const query = parseInput(listQuery, queryOf(req.query), 'query parameter');
  if (query.endpoint !== undefined) requireEndpoint(context.endpoints, query.endpoint);
  const before = query.cursor === undefined ? undefined : decodeCursor(pageCursor, query.cursor);
  const rows = await listHeldPage(context.pool, {
    endpoint: query.endpoint,
    reason: query.reason,
    before: before ? { receivedAt: before.at, id: before.id } : undefined,
    limit: query.limit + 1,
  });
  const shown = rows.slice(0, query.limit);
  const last = shown.at(-1);
  const body: Schemas['QuarantinePage'] = {
    items: shown.map((row) => summary(row, row.received_key)),
    next_cursor:
      rows.length > query.limit && last ? encodeCursor({ at: last.received_key, id: last.id }) : null,
  };
  res.json(body);
}

/** Whether bytes are valid UTF-8 (TextDecoder with fatal refuses anything else). */
function utf8(body: Buffer): string | null {
  try {
    return new TextDecoder('utf-8', { fatal: true }).decode(body);
  } catch {
    return null;
  }
}

/** GET /quarantine/{id}: `hookgate quarantine show`, the body as received, with its entity tag. */
export async function getQuarantined(context: ApiContext, req: Request, res: Response): Promise<void> {
  const id = parseInput(numericId, req.params.quarantine_id, 'path parameter');
  const [row] = await showQuarantined(context.pool, [id]);
  if (!row || !context.endpoints.includes(row.endpoint))
    throw new HookgateError('not_found', `No quarantined delivery ${id} on a configured endpoint.`);
  const etag = quarantineEtag(row);
  const body: Schemas['QuarantineDetail'] = {
    quarantined: summary(row, iso(row.received_at)),
    headers: row.headers,
    body_base64: row.body.toString('base64'),
    body_text: utf8(row.body),
    etag,
  };
  res.setHeader('ETag', etag);
  res.json(body);
}
