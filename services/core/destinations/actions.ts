import type pg from 'pg';
import { recordAction } from '../audit/audit.ts';
import type { Config } from '../config/schema.ts';
import { withTransaction } from '../db/transaction.ts';
import { HookgateError } from '../errors.ts';
import { fenceEndpointApplies, shareEndpointFence } from '../pause/pause.ts';
import {
  type AttemptRow,
  type DeliveryQuery,
  type DeliveryRow,
  type DestinationStatsRow,
  deliveriesOfEvent,
  deliveryWithAttempts,
  destinationStatsRows,
  listDeliveryRows,
} from '../read-models/destinations-sql.ts';
import { holdRows, redeliverRows, releaseRows } from './deliveries.ts';
import { compileFilter } from './filter.ts';
import { destinationStates, setPaused } from './state.ts';

// The operators' actions on destinations, one function each: the CLI calls them, and the
// console and an audit trail can call the same ones. Each takes who acts (`actor`) and returns a
// summary whose `count` says how many deliveries it touched.

/** Which destination: its name, and its endpoint when several endpoints use that name. */
export interface DestinationRef {
  readonly endpoint?: string | undefined;
  readonly destination: string;
}

interface Named {
  readonly endpoint: string;
  readonly destination: string;
}

/** The configured destination a reference names; refused when it names none or several. */
export function resolveDestination(config: Pick<Config, 'endpoints'>, ref: DestinationRef): Named {
  const matching = Object.entries(config.endpoints)
    .filter(
      ([endpoint, settings]) =>
        (ref.endpoint === undefined || endpoint === ref.endpoint) &&
        Object.hasOwn(settings.destinations ?? {}, ref.destination),
    )
    .map(([endpoint]) => ({ endpoint, destination: ref.destination }));
  if (matching.length === 1) return matching[0]!;
  const known = Object.entries(config.endpoints).flatMap(([endpoint, settings]) =>
    Object.keys(settings.destinations ?? {}).map((name) => `${endpoint}/${name}`),
  );
  if (matching.length === 0) {
    throw new HookgateError(
      'destination_unknown',
      `No destination ${ref.endpoint ? `${ref.endpoint}/` : ''}${ref.destination} is configured; the configured ones are ${known.length > 0 ? known.join(', ') : 'none'}.`,
    );
  }
  throw new HookgateError(
    'usage_invalid',
    `Destination ${ref.destination} is configured on ${matching.map((m) => m.endpoint).join(', ')}: name one with --endpoint.`,
  );
}

export async function listDeliveries(db: pg.Pool, query: DeliveryQuery): Promise<DeliveryRow[]> {
  return listDeliveryRows(db, query);
}

export async function showDelivery(
  db: pg.Pool,
  id: string,
): Promise<{ delivery: DeliveryRow; attempts: AttemptRow[] }> {
  const found = /^\d{1,18}$/.test(id) ? await deliveryWithAttempts(db, id) : null;
  if (!found)
    throw new HookgateError('delivery_unknown', `No delivery ${id} ("hookgate deliveries list" lists them).`);
  return found;
}

/**
 * One destination's part in an event: what its filter says today (for one routed by the handler:
 * whether the handler routed the event there), and its delivery, if any.
 */
export interface EventDestination {
  readonly destination: string;
  /** Absent when the destination is no longer configured. */
  readonly routedBy?: 'filter' | 'handler';
  /** Null when the destination is no longer configured (only its delivery is known). */
  readonly matches: boolean | null;
  readonly reason?: string;
  readonly delivery: DeliveryRow | null;
}

/**
 * An event's destinations for `events show`: each configured one with its filter's decision on
 * the event as stored, and each delivery row (the record of what was done; a decision made with
 * today's configuration may differ from the one made when the event was applied).
 */
export async function eventDestinations(
  db: pg.Pool,
  config: Pick<Config, 'endpoints'> | null,
  event: {
    readonly endpoint: string;
    readonly eventId: string;
    readonly eventType: string;
    readonly payload: unknown;
  },
): Promise<EventDestination[]> {
  const rows = new Map(
    (await deliveriesOfEvent(db, event.endpoint, event.eventId)).map((row) => [row.destination, row]),
  );
  const configured = Object.entries(config?.endpoints[event.endpoint]?.destinations ?? {});
  const shown: EventDestination[] = configured.map(([destination, settings]) => {
    if (settings.routedBy === 'handler') {
      const delivery = rows.get(destination) ?? null;
      return { destination, routedBy: 'handler', matches: delivery !== null, delivery };
    }
    const decision = compileFilter(settings.filter)({ eventType: event.eventType, payload: event.payload });
    return {
      destination,
      routedBy: 'filter',
      matches: decision.matches,
      ...(decision.matches ? {} : { reason: decision.reason }),
      delivery: rows.get(destination) ?? null,
    };
  });
  for (const [destination, delivery] of rows) {
    if (!configured.some(([name]) => name === destination))
      shown.push({ destination, matches: null, delivery });
  }
  return shown;
}

/**
 * `stats` per destination: every configured destination (zeros when it has no rows) and any
 * other that has rows.
 */
/** A destination's figures in `stats`, with its pause (null when running). */
export interface DestinationStats extends DestinationStatsRow {
  readonly paused: {
    readonly since: Date;
    readonly by: string;
    readonly reason: string | null;
  } | null;
}

export async function destinationStats(
  db: pg.Pool,
  config: Pick<Config, 'endpoints'> | null,
  since: Date,
  endpoint: string | null,
): Promise<DestinationStats[]> {
  const rows = await destinationStatsRows(db, since, endpoint);
  const key = (e: string, d: string) => `${e}/${d}`;
  const known = new Map(rows.map((row) => [key(row.endpoint, row.destination), row]));
  for (const [name, settings] of Object.entries(config?.endpoints ?? {})) {
    if (endpoint !== null && name !== endpoint) continue;
    for (const destination of Object.keys(settings.destinations ?? {})) {
      if (!known.has(key(name, destination)))
        known.set(key(name, destination), {
          endpoint: name,
          destination,
          waiting: 0,
          held: 0,
          dead: 0,
          delivered: 0,
          p99_seconds: null,
          breaker: 'closed',
        });
    }
  }
  const sorted = [...known.values()].sort((a, b) =>
    key(a.endpoint, a.destination) < key(b.endpoint, b.destination) ? -1 : 1,
  );
  // A paused destination says so, with who, since when and why, not only through its HELD count.
  const paused = new Map(
    (await destinationStates(db, sorted))
      .filter((state) => state.paused)
      .map((state) => [key(state.endpoint, state.destination), state]),
  );
  return sorted.map((row) => {
    const state = paused.get(key(row.endpoint, row.destination));
    return {
      ...row,
      paused: state ? { since: state.changed_at, by: state.changed_by, reason: state.reason } : null,
    };
  });
}

/** Event ids an audit row of a redelivery keeps (a redelivery of more still counts them all). */
const AUDITED_EVENTS = 10_000;

export interface RedeliverRequest extends DestinationRef {
  readonly actor: string;
  /** These deliveries; else every delivery of the destination in `statuses`. */
  readonly ids?: readonly string[] | undefined;
  /** Default: dead only. */
  readonly statuses?: readonly ('dead' | 'delivered')[] | undefined;
  readonly dryRun: boolean;
}

export interface ActionSummary extends Named {
  readonly actor: string;
  readonly count: number;
  readonly dryRun: boolean;
}

/**
 * Dead (or delivered) deliveries sent again, each with its own webhook-id and Idempotency-Key
 * unchanged, so a receiver that already has one dedupes it. Each gets a fresh retry budget.
 */
export async function redeliver(
  db: pg.Pool,
  config: Pick<Config, 'endpoints'>,
  request: RedeliverRequest,
): Promise<ActionSummary & { readonly ids: string[] }> {
  const target = resolveDestination(config, request);
  const ids = request.ids && request.ids.length > 0 ? [...request.ids] : null;
  if (ids?.some((id) => !/^\d{1,18}$/.test(id))) {
    throw new HookgateError(
      'usage_invalid',
      'Delivery ids are numbers ("hookgate deliveries list" shows them).',
    );
  }
  const statuses = request.statuses ?? ['dead'];
  return withTransaction(db, async (tx) => {
    if (!request.dryRun) await shareEndpointFence(tx, target.endpoint);
    const rows = await redeliverRows(tx, { ...target, ids, statuses }, request.dryRun);
    const taken = rows.map((row) => row.id);
    await recordAction(tx, {
      actor: request.actor,
      command: 'redeliver',
      endpoint: target.endpoint,
      filters: {
        destination: target.destination,
        ...(ids ? { ids } : { statuses }),
        deliveries: taken.slice(0, 1000),
      },
      count: taken.length,
      dryRun: request.dryRun,
      // So `events show` and the console's event page list the redelivery among the event's actions.
      eventIds: [...new Set(rows.map((row) => row.eventId))].slice(0, AUDITED_EVENTS),
    });
    return { ...target, actor: request.actor, count: taken.length, ids: taken, dryRun: request.dryRun };
  });
}

export interface PauseRequest extends DestinationRef {
  readonly actor: string;
  /** Why: shown with the paused state and kept in the audit row. */
  readonly reason?: string | undefined;
}

/** Pause or resume, with its rows held or released and its audit row, in one transaction. */
async function setDestinationPaused(
  db: pg.Pool,
  config: Pick<Config, 'endpoints'>,
  request: PauseRequest,
  paused: boolean,
): Promise<ActionSummary & { readonly wasPaused: boolean }> {
  const target = resolveDestination(config, request);
  return withTransaction(db, async (tx) => {
    // Applies of the endpoint in flight commit first, so the deliveries they wrote are held too.
    await fenceEndpointApplies(tx, target.endpoint);
    const { wasPaused } = await setPaused(
      tx,
      target.endpoint,
      target.destination,
      paused,
      request.actor,
      request.reason ?? null,
    );
    const count = paused
      ? await holdRows(tx, target.endpoint, target.destination)
      : await releaseRows(tx, target.endpoint, target.destination);
    await recordAction(tx, {
      actor: request.actor,
      command: paused ? 'destination pause' : 'destination resume',
      endpoint: target.endpoint,
      filters: { destination: target.destination, was_paused: wasPaused },
      count,
      dryRun: false,
      reason: request.reason,
    });
    return { ...target, actor: request.actor, count, dryRun: false, wasPaused };
  });
}

/**
 * Pauses a destination: what waits to be sent is held (no attempt is made or counted while
 * held), and the relay claims nothing of it until resumed. An attempt already in flight ends.
 */
export function pauseDestination(
  db: pg.Pool,
  config: Pick<Config, 'endpoints'>,
  request: PauseRequest,
): Promise<ActionSummary & { readonly wasPaused: boolean }> {
  return setDestinationPaused(db, config, request, true);
}

/** Resumes a destination: its held deliveries are due again at once (or when their retry was due). */
export function resumeDestination(
  db: pg.Pool,
  config: Pick<Config, 'endpoints'>,
  request: PauseRequest,
): Promise<ActionSummary & { readonly wasPaused: boolean }> {
  return setDestinationPaused(db, config, request, false);
}
