import { z } from 'zod';
import { consoleActor } from '../../core/audit/actor.ts';
import {
  destinationStats,
  pauseDestination,
  redeliver,
  resumeDestination,
} from '../../core/destinations/actions.ts';
import { destinationStates } from '../../core/destinations/state.ts';
import type { ActionContext, ConsoleAction } from './registry.ts';

// A destination's pause and resume, and redelivery: `hookgate destination pause|resume` and
// `hookgate redeliver`'s functions (services/core/destinations/actions.ts). Redeliver's dry run
// is that function's own dry run, audited as the CLI's is.

const destinationFields = z.strictObject({
  endpoint: z.string().min(1).max(63),
  destination: z.string().min(1).max(63),
  delivery_id: z
    .string()
    .regex(/^\d{1,18}$/)
    .optional(),
  reason: z.string().trim().min(1).max(1000).optional(),
});

export interface DestinationTarget {
  readonly endpoint: string;
  readonly destination: string;
  /** Redeliver this one delivery (dead or delivered); else every dead one of the destination. */
  readonly deliveryId?: string | undefined;
  /** Why it is paused (pause only). */
  readonly reason?: string | undefined;
}

function parseTarget(
  fields: Readonly<Record<string, unknown>>,
  endpoints: readonly string[],
): DestinationTarget | string {
  const parsed = destinationFields.safeParse(
    Object.fromEntries(Object.entries(fields).filter(([, value]) => value !== '')),
  );
  if (!parsed.success)
    return 'The form is incomplete or malformed; open it again from the destinations page.';
  if (!endpoints.includes(parsed.data.endpoint))
    return `No endpoint named ${parsed.data.endpoint} is configured.`;
  return {
    endpoint: parsed.data.endpoint,
    destination: parsed.data.destination,
    deliveryId: parsed.data.delivery_id,
    reason: parsed.data.reason,
  };
}

const fieldsOf = (target: DestinationTarget): Record<string, string> => ({
  endpoint: target.endpoint,
  destination: target.destination,
  ...(target.deliveryId ? { delivery_id: target.deliveryId } : {}),
  ...(target.reason ? { reason: target.reason } : {}),
});

const named = (target: DestinationTarget) => `${target.endpoint}/${target.destination}`;

// The form names any destination; the preview must not promise an action the run would refuse.
function configured(context: ActionContext, target: DestinationTarget): boolean {
  return Object.hasOwn(context.config.endpoints[target.endpoint]?.destinations ?? {}, target.destination);
}

async function stateOf(context: ActionContext, target: DestinationTarget) {
  const states = await destinationStates(context.pool, [target]);
  const state = states.find((s) => s.endpoint === target.endpoint && s.destination === target.destination);
  const [stats] = await destinationStats(
    context.pool,
    { endpoints: { [target.endpoint]: context.config.endpoints[target.endpoint]! } },
    new Date(Date.now() - 3_600_000),
    target.endpoint,
  ).then((rows) => rows.filter((row) => row.destination === target.destination));
  return { paused: state?.paused === true, by: state?.changed_by ?? null, stats };
}

export const pauseDestinationAction: ConsoleAction<DestinationTarget> = {
  id: 'destination-pause',
  title: 'Pause destination',
  parse: parseTarget,
  fields: fieldsOf,
  async preview(context, target) {
    if (!configured(context, target))
      return { count: 0, summary: `${named(target)} is not a configured destination.`, sample: [] };
    const { paused, by, stats } = await stateOf(context, target);
    return {
      count: paused ? 0 : 1,
      summary: paused
        ? `${named(target)} is already paused (by ${by}).`
        : `Would pause ${named(target)}: its ${stats?.waiting ?? 0} waiting deliveries are held (no attempt made or counted) until it is resumed; other destinations keep sending.`,
      sample: [],
      confirmLabel: `Pause ${named(target)}`,
    };
  },
  async run(context, target) {
    const summary = await pauseDestination(context.pool, context.config, {
      endpoint: target.endpoint,
      destination: target.destination,
      actor: consoleActor(context.viewer.name),
      reason: target.reason,
    });
    return {
      changed: summary.wasPaused ? 0 : 1,
      message: summary.wasPaused
        ? `${named(target)} was already paused.`
        : `Paused ${named(target)}: ${summary.count} deliveries held until it is resumed.`,
      back: '/destinations',
    };
  },
};

export const resumeDestinationAction: ConsoleAction<DestinationTarget> = {
  id: 'destination-resume',
  title: 'Resume destination',
  parse: parseTarget,
  fields: fieldsOf,
  async preview(context, target) {
    if (!configured(context, target))
      return { count: 0, summary: `${named(target)} is not a configured destination.`, sample: [] };
    const { paused, by, stats } = await stateOf(context, target);
    return {
      count: paused ? 1 : 0,
      summary: paused
        ? `Would resume ${named(target)} (paused by ${by}): its ${stats?.held ?? 0} held deliveries are due again at once.`
        : `${named(target)} is not paused.`,
      sample: [],
      confirmLabel: `Resume ${named(target)}`,
    };
  },
  async run(context, target) {
    const summary = await resumeDestination(context.pool, context.config, {
      endpoint: target.endpoint,
      destination: target.destination,
      actor: consoleActor(context.viewer.name),
    });
    return {
      changed: summary.wasPaused ? 1 : 0,
      message: summary.wasPaused
        ? `Resumed ${named(target)}: ${summary.count} held deliveries are due again.`
        : `${named(target)} was not paused.`,
      back: '/destinations',
    };
  },
};

/** One delivery (dead or delivered), else every dead one of the destination: `hookgate redeliver`'s. */
function redeliverTarget(context: ActionContext, target: DestinationTarget, dryRun: boolean) {
  return redeliver(context.pool, context.config, {
    endpoint: target.endpoint,
    destination: target.destination,
    actor: consoleActor(context.viewer.name),
    ...(target.deliveryId
      ? { ids: [target.deliveryId], statuses: ['dead', 'delivered'] as const }
      : { statuses: ['dead'] as const }),
    dryRun,
  });
}

export const redeliverAction: ConsoleAction<DestinationTarget> = {
  id: 'redeliver',
  title: 'Redeliver',
  parse: parseTarget,
  fields: fieldsOf,
  async preview(context, target) {
    if (!configured(context, target))
      return { count: 0, summary: `${named(target)} is not a configured destination.`, sample: [] };
    const summary = await redeliverTarget(context, target, true);
    const what = target.deliveryId ? `delivery ${target.deliveryId}` : `every dead delivery`;
    return {
      count: summary.count,
      summary:
        summary.count === 0
          ? `Nothing to redeliver: ${what} of ${named(target)} is neither dead nor delivered.`
          : `Would send ${summary.count} ${summary.count === 1 ? 'delivery' : 'deliveries'} of ${named(target)} again (${what}), with the same webhook-id and Idempotency-Key, so a receiver that has one already dedupes it; each gets a fresh retry budget.`,
      sample: [],
      confirmLabel: `Redeliver ${summary.count}`,
    };
  },
  async run(context, target) {
    const summary = await redeliverTarget(context, target, false);
    return {
      changed: summary.count,
      message: `Redelivering ${summary.count} ${summary.count === 1 ? 'delivery' : 'deliveries'} of ${named(target)}.`,
      back: '/destinations',
    };
  },
};
