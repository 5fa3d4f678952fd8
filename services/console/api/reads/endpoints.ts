import type { Request, Response } from 'express';
import { z } from 'zod';
import { destinationStats } from '../../../core/destinations/actions.ts';
import { pausedEndpoints } from '../../../core/pause/pause.ts';
import { countHeld } from '../../../core/quarantine/actions.ts';
import { readBacklog } from '../../../core/read-models/backlog.ts';
import { collectStats } from '../../../core/read-models/stats.ts';
import type { ApiContext } from '../context.ts';
import { requireEndpoint } from '../lookups.ts';
import { endpointName, iso, parseInput, pointInTime, queryOf } from '../params.ts';
import type { components } from '../schema.ts';
import { endpointEtag } from '../states.ts';

type Schemas = components['schemas'];

const round = (value: number) => Math.round(value * 1000) / 1000;

/** GET /endpoints: each configured endpoint with its pause, its backlog now and its held quarantine. */
export async function listEndpoints(context: ApiContext, _req: Request, res: Response): Promise<void> {
  const [backlog, pauses, held] = await Promise.all([
    readBacklog(context.pool),
    pausedEndpoints(context.pool),
    countHeld(context.pool),
  ]);
  const items = context.endpoints.map((name): Schemas['Endpoint'] => {
    const info = context.endpointInfo[name]!;
    const pause = pauses.find((state) => state.endpoint === name) ?? null;
    const count = (status: string) => backlog.find((row) => row.endpoint === name && row.status === status);
    const pending = count('pending');
    return {
      name,
      provider: info.provider,
      handler: info.handler,
      mode: info.mode === 'sync' ? 'sync' : 'async',
      paused: pause !== null,
      paused_at: iso(pause?.paused_at),
      paused_by: pause?.paused_by ?? null,
      pause_reason: pause?.pause_reason ?? null,
      pending: pending?.events ?? 0,
      oldest_pending_age_seconds: pending ? round(pending.oldestAgeSeconds) : null,
      parked: count('parked')?.events ?? 0,
      dead: count('dead')?.events ?? 0,
      quarantine_held: held[name] ?? 0,
      etag: endpointEtag(pause),
    };
  });
  const body: Schemas['EndpointList'] = { items, next_cursor: null };
  res.json(body);
}

const statsQuery = (now: () => number) =>
  z.strictObject({ since: pointInTime(now).optional(), endpoint: endpointName.optional() });

/** GET /stats: `hookgate stats --json`, destinations always included. */
export async function getStats(context: ApiContext, req: Request, res: Response): Promise<void> {
  const query = parseInput(statsQuery(context.now), queryOf(req.query), 'query parameter');
  if (query.endpoint !== undefined) requireEndpoint(context.endpoints, query.endpoint);
  const since = query.since ?? new Date(context.now() - 3_600_000);
  const endpoint = query.endpoint ?? null;
  const report = await collectStats(context.pool, since, endpoint, context.endpoints);
  const destinations = await destinationStats(context.pool, context.config, since, endpoint);
  const body: Schemas['Stats'] = {
    since: report.since,
    endpoints: report.endpoints,
    destinations: destinations.map((row) => ({
      endpoint: row.endpoint,
      destination: row.destination,
      waiting: row.waiting,
      held: row.held,
      dead: row.dead,
      delivered: row.delivered,
      p99_seconds: row.p99_seconds,
      breaker: row.breaker as Schemas['DestinationStats']['breaker'],
      paused: row.paused
        ? { since: iso(row.paused.since), by: row.paused.by, reason: row.paused.reason }
        : null,
    })),
    reconcile: report.reconcile,
  };
  res.json(body);
}
