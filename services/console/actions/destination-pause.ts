import { z } from 'zod';
import { consoleActor } from '../../core/audit/actor.ts';
import { pauseDestination, resumeDestination } from '../../core/destinations/actions.ts';
import { destinationStates } from '../../core/destinations/state.ts';
import type { ActionContext, ConsoleAction } from './registry.ts';

/**
 * Holding and releasing one destination: `hookgate destination pause|resume`'s functions
 * (services/core/destinations/actions.ts), audited as console:<user>.
 */
const fields = z.strictObject({
  endpoint: z.string().min(1).max(63),
  destination: z.string().min(1).max(63),
});

export interface DestinationTarget {
  readonly endpoint: string;
  readonly destination: string;
}

function parseTarget(
  raw: Readonly<Record<string, unknown>>,
  endpoints: readonly string[],
): DestinationTarget | string {
  const parsed = fields.safeParse(raw);
  if (!parsed.success)
    return 'The form is incomplete or malformed; open it again from the destinations page.';
  if (!endpoints.includes(parsed.data.endpoint))
    return `No endpoint named ${parsed.data.endpoint} is configured.`;
  return parsed.data;
}

function configured(context: ActionContext, target: DestinationTarget): boolean {
  return Object.hasOwn(context.config.endpoints[target.endpoint]?.destinations ?? {}, target.destination);
}

async function pausedNow(context: ActionContext, target: DestinationTarget): Promise<boolean> {
  return (await destinationStates(context.pool)).some(
    (row) => row.endpoint === target.endpoint && row.destination === target.destination && row.paused,
  );
}

const name = (target: DestinationTarget) => `${target.endpoint}/${target.destination}`;

export const pauseDestinationAction: ConsoleAction<DestinationTarget> = {
  id: 'destination-pause',
  title: 'Pause destination',
  parse: parseTarget,
  fields: (target) => ({ endpoint: target.endpoint, destination: target.destination }),
  async preview(context, target) {
    if (!configured(context, target))
      return { count: 0, summary: `${name(target)} is not a configured destination.`, sample: [] };
    const paused = await pausedNow(context, target);
    return {
      count: paused ? 0 : 1,
      summary: paused
        ? `${name(target)} is already paused.`
        : `Would pause ${name(target)}: its waiting deliveries are held and none is sent until it is resumed.`,
      sample: [],
      confirmLabel: `Pause ${name(target)}`,
    };
  },
  async run(context, target) {
    const summary = await pauseDestination(context.pool, context.config, {
      ...target,
      actor: consoleActor(context.viewer.name),
    });
    return {
      changed: summary.wasPaused ? 0 : 1,
      message: summary.wasPaused
        ? `${name(target)} was already paused.`
        : `Paused ${name(target)}: ${summary.count} delivery(ies) held.`,
      back: '/destinations',
    };
  },
};

export const resumeDestinationAction: ConsoleAction<DestinationTarget> = {
  id: 'destination-resume',
  title: 'Resume destination',
  parse: parseTarget,
  fields: (target) => ({ endpoint: target.endpoint, destination: target.destination }),
  async preview(context, target) {
    if (!configured(context, target))
      return { count: 0, summary: `${name(target)} is not a configured destination.`, sample: [] };
    const paused = await pausedNow(context, target);
    return {
      count: paused ? 1 : 0,
      summary: paused
        ? `Would resume ${name(target)}: its held deliveries are due again.`
        : `${name(target)} is not paused.`,
      sample: [],
      confirmLabel: `Resume ${name(target)}`,
    };
  },
  async run(context, target) {
    const summary = await resumeDestination(context.pool, context.config, {
      ...target,
      actor: consoleActor(context.viewer.name),
    });
    return {
      changed: summary.wasPaused ? 1 : 0,
      message: summary.wasPaused
        ? `Resumed ${name(target)}: ${summary.count} delivery(ies) released.`
        : `${name(target)} was not paused.`,
      back: '/destinations',
    };
  },
};
