import { z } from 'zod';
import { consoleActor } from '../../core/audit/actor.ts';
import { pausedEndpoints, pauseEndpoint, resumeEndpoint } from '../../core/pause/pause.ts';
import type { ActionContext, ConsoleAction } from './registry.ts';

/** Holding and releasing an endpoint: `hookgate pause` / `resume`'s functions (services/core/pause/pause.ts). */
const pauseFields = z.strictObject({
  endpoint: z.string().min(1).max(63),
  reason: z.string().trim().min(1).max(1000).optional(),
});

export interface PauseTarget {
  readonly endpoint: string;
  readonly reason?: string | undefined;
}

function parseTarget(
  fields: Readonly<Record<string, unknown>>,
  endpoints: readonly string[],
): PauseTarget | string {
  const parsed = pauseFields.safeParse(
    Object.fromEntries(Object.entries(fields).filter(([, value]) => value !== '')),
  );
  if (!parsed.success) return 'The form is incomplete or malformed; open it again from the overview.';
  if (!endpoints.includes(parsed.data.endpoint))
    return `No endpoint named ${parsed.data.endpoint} is configured.`;
  return parsed.data;
}

async function pausedNow(context: ActionContext, endpoint: string) {
  return (await pausedEndpoints(context.pool)).find((pause) => pause.endpoint === endpoint) ?? null;
}

export const pauseAction: ConsoleAction<PauseTarget> = {
  id: 'pause',
  title: 'Pause',
  parse: parseTarget,
  fields(target) {
    return { endpoint: target.endpoint, ...(target.reason ? { reason: target.reason } : {}) };
  },
  async preview(context, target) {
    const current = await pausedNow(context, target.endpoint);
    return {
      count: current ? 0 : 1,
      summary: current
        ? `${target.endpoint} is already paused (by ${current.paused_by}).`
        : `Would pause ${target.endpoint}: workers apply none of its events until it is resumed; the gateway keeps accepting them.`,
      sample: [],
      confirmLabel: `Pause ${target.endpoint}`,
    };
  },
  async run(context, target) {
    const summary = await pauseEndpoint(context.pool, {
      endpoint: target.endpoint,
      actor: consoleActor(context.viewer.name),
      reason: target.reason,
    });
    return {
      changed: summary.changed ? 1 : 0,
      message: summary.changed
        ? `Paused ${target.endpoint}: its events are held until it is resumed.`
        : `${target.endpoint} was already paused.`,
      back: '/',
    };
  },
};

export const resumeAction: ConsoleAction<PauseTarget> = {
  id: 'resume',
  title: 'Resume',
  parse: parseTarget,
  fields(target) {
    return { endpoint: target.endpoint };
  },
  async preview(context, target) {
    const current = await pausedNow(context, target.endpoint);
    return {
      count: current ? 1 : 0,
      summary: current
        ? `Would resume ${target.endpoint} (paused by ${current.paused_by}): its held events are applied in their order.`
        : `${target.endpoint} is not paused.`,
      sample: [],
      confirmLabel: `Resume ${target.endpoint}`,
    };
  },
  async run(context, target) {
    const summary = await resumeEndpoint(context.pool, {
      endpoint: target.endpoint,
      actor: consoleActor(context.viewer.name),
    });
    return {
      changed: summary.changed ? 1 : 0,
      message: summary.changed
        ? `Resumed ${target.endpoint}: its held events are applied in their order.`
        : `${target.endpoint} was not paused.`,
      back: '/',
    };
  },
};
