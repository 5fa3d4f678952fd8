import type { Request, Response } from 'express';
import { z } from 'zod';
import { destinationStats } from '../../../core/destinations/actions.ts';
import { destinationStates } from '../../../core/destinations/state.ts';
import type { ApiContext } from '../context.ts';
import { iso, parseInput, pointInTime, queryOf } from '../params.ts';
import type { components } from '../schema.ts';
import { destinationEtag } from '../states.ts';

type Schemas = components['schemas'];

/**
 * GET /destinations: the destinations page's figures (`destinationStats`, as `hookgate stats`
 * reports them) and each one's pause (`destinationStates`), with the entity tag pause and resume
 * take as If-Match.
 */
export async function listDestinations(context: ApiContext, req: Request, res: Response): Promise<void> {
  const query = parseInput(
    z.strictObject({ since: pointInTime(context.now).optional() }),
    queryOf(req.query),
    'query parameter',
  );
  const since = query.since ?? new Date(context.now() - 3_600_000);
  const rows = await destinationStats(context.pool, context.config, since, null);
  const states = new Map(
    (await destinationStates(context.pool, rows)).map((state) => [
      `${state.endpoint}/${state.destination}`,
      state,
    ]),
  );
  const body: Schemas['DestinationList'] = {
    since: since.toISOString(),
    items: rows.map((row) => {
      const state = states.get(`${row.endpoint}/${row.destination}`);
      return {
        endpoint: row.endpoint,
        destination: row.destination,
        configured: Object.hasOwn(
          context.config.endpoints[row.endpoint]?.destinations ?? {},
          row.destination,
        ),
        paused: state?.paused === true,
        changed_by: state?.changed_by ?? null,
        changed_at: iso(state?.changed_at),
        pause_reason: state?.paused ? state.reason : null,
        breaker: row.breaker as Schemas['Destination']['breaker'],
        waiting: row.waiting,
        held: row.held,
        dead: row.dead,
        delivered: row.delivered,
        p99_seconds: row.p99_seconds,
        etag: destinationEtag(state ?? null),
      };
    }),
    next_cursor: null,
  };
  res.json(body);
}
