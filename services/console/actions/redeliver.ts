import { z } from 'zod';
import { consoleActor } from '../../core/audit/actor.ts';
import { redeliver } from '../../core/destinations/actions.ts';
import type { ActionContext, ConsoleAction } from './registry.ts';

/**
 * Sending deliveries again: `hookgate redeliver`'s function (services/core/destinations/actions.ts),
 * same webhook-id and Idempotency-Key, a fresh retry budget, audited as console:<user> (its dry
 * run too, as the CLI's is). One delivery by id, or every dead delivery of one destination, at
 * most REDELIVER_LIMIT per run (more is the CLI's job).
 */
export const REDELIVER_LIMIT = 10_000;

const fields = z.strictObject({
  endpoint: z.string().min(1).max(63),
  destination: z.string().min(1).max(63),
  id: z
    .string()
    .regex(/^\d{1,18}$/)
    .optional(),
});

export interface RedeliverTarget {
  readonly endpoint: string;
  readonly destination: string;
  readonly id?: string | undefined;
}

const name = (target: RedeliverTarget) =>
  target.id
    ? `delivery ${target.id} of ${target.endpoint}/${target.destination}`
    : `${target.endpoint}/${target.destination}`;

function configured(context: ActionContext, target: RedeliverTarget): boolean {
  return Object.hasOwn(context.config.endpoints[target.endpoint]?.destinations ?? {}, target.destination);
}

function request(context: ActionContext, target: RedeliverTarget, dryRun: boolean) {
  return redeliver(context.pool, context.config, {
    endpoint: target.endpoint,
    destination: target.destination,
    actor: consoleActor(context.viewer.name),
    // One delivery may be dead or delivered; a whole destination's run takes its dead ones.
    ...(target.id
      ? { ids: [target.id], statuses: ['dead', 'delivered'] as const }
      : { statuses: ['dead'] as const }),
    dryRun,
  });
}

export const redeliverAction: ConsoleAction<RedeliverTarget> = {
  id: 'redeliver',
  title: 'Redeliver',
  parse(raw, endpoints) {
    const parsed = fields.safeParse(
      Object.fromEntries(Object.entries(raw).filter(([, value]) => value !== '')),
    );
    if (!parsed.success)
      return 'The form is incomplete or malformed; open it again from the destinations page.';
    if (!endpoints.includes(parsed.data.endpoint))
      return `No endpoint named ${parsed.data.endpoint} is configured.`;
    return parsed.data;
  },
  fields: (target) => ({
    endpoint: target.endpoint,
    destination: target.destination,
    ...(target.id ? { id: target.id } : {}),
  }),
  async preview(context, target) {
    if (!configured(context, target))
      return { count: 0, summary: `${name(target)} is not a configured destination.`, sample: [] };
    const summary = await request(context, target, true);
    const over = summary.count > REDELIVER_LIMIT;
    return {
      count: over ? 0 : summary.count,
      summary: over
        ? `${name(target)} has ${summary.count} dead deliveries, more than the console's ${REDELIVER_LIMIT} per run: use hookgate redeliver.`
        : `Would send ${summary.count} delivery(ies) of ${name(target)} again, with the same webhook-id and a fresh retry budget.`,
      sample: [],
      confirmLabel: `Redeliver ${summary.count} delivery(ies)`,
    };
  },
  async run(context, target) {
    if (!configured(context, target))
      return {
        changed: 0,
        message: `${name(target)} is not a configured destination.`,
        back: '/destinations',
      };
    const planned = await request(context, target, true);
    if (planned.count > REDELIVER_LIMIT)
      return {
        changed: 0,
        message: `Nothing sent: ${planned.count} deliveries are more than the console's ${REDELIVER_LIMIT} per run; use hookgate redeliver.`,
        back: '/destinations',
      };
    const summary = await request(context, target, false);
    return {
      changed: summary.count,
      message: `Redelivering ${summary.count} delivery(ies) of ${name(target)}.`,
      back: '/destinations',
    };
  },
};
