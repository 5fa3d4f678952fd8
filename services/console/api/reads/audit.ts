import type { Request, Response } from 'express';
import { z } from 'zod';
import { type AuditRow, listActions } from '../../../core/audit/audit.ts';
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
  pointInTime,
  queryOf,
} from '../params.ts';
import type { components } from '../schema.ts';

type Schemas = components['schemas'];

export function auditEntry(row: AuditRow): Schemas['AuditEntry'] {
  return {
    id: row.id,
    at: iso(row.at),
    actor: row.actor,
    command: row.command,
    endpoint: row.endpoint,
    filters: row.filters,
    count: row.count,
    dry_run: row.dry_run,
    reason: row.reason,
    event_ids: row.event_ids,
  };
}

const auditQuery = (now: () => number) =>
  z.strictObject({
    since: pointInTime(now).optional(),
    endpoint: endpointName.optional(),
    actor: z.string().min(1).max(200).optional(),
    command: z.string().min(1).max(63).optional(),
    limit,
    cursor: cursor.optional(),
  });

/** The last row's time to the microsecond and its id (the console's audit cursor). */
const pageCursor = z.strictObject({
  at: z.string().regex(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{1,6})?Z$/),
  id: numericId,
});

/** GET /audit: `hookgate audit`, newest first, in the console's keyset pages (listActions). */
export async function listAudit(context: ApiContext, req: Request, res: Response): Promise<void> {
  const query = parseInput(auditQuery(context.now), queryOf(req.query), 'query parameter');
  if (query.endpoint !== undefined) requireEndpoint(context.endpoints, query.endpoint);
  const before = query.cursor === undefined ? undefined : decodeCursor(pageCursor, query.cursor);
  const rows = await listActions(context.pool, {
    since: query.since,
    endpoint: query.endpoint,
    actor: query.actor,
    command: query.command,
    before,
    limit: query.limit + 1,
  });
  const shown = rows.slice(0, query.limit);
  const last = shown.at(-1);
  const body: Schemas['AuditPage'] = {
    items: shown.map(auditEntry),
    next_cursor:
      rows.length > query.limit && last?.at_key ? encodeCursor({ at: last.at_key, id: last.id }) : null,
  };
  res.json(body);
}
