import { z } from 'zod';
import { consoleActor } from '../../core/audit/actor.ts';
import { type DiscardRequest, discard } from '../../core/inbox/discard.ts';
import { DISCARDABLE_STATUSES } from '../../core/inbox/status.ts';
import { consolePath } from '../html/html.ts';
import type { ConsoleAction } from './registry.ts';

/** A parked or dead event settled for good, with a reason: `hookgate discard`'s function (services/core/inbox/discard.ts). */
const fieldsSchema = z.strictObject({
  endpoint: z.string().min(1).max(63),
  event_id: z.string().min(1).max(512),
  reason: z.string().trim().min(1).max(1000),
});

export interface DiscardTarget {
  readonly endpoint: string;
  readonly eventId: string;
  readonly reason: string;
}

function requestOf(target: DiscardTarget, actor: string, dryRun: boolean): DiscardRequest {
  return {
    endpoint: target.endpoint,
    statuses: DISCARDABLE_STATUSES,
    eventIds: [target.eventId],
    limit: 1,
    reason: target.reason,
    actor,
    dryRun,
  };
}

export const discardAction: ConsoleAction<DiscardTarget> = {
  id: 'discard',
  title: 'Discard',
  parse(fields, endpoints) {
    const parsed = fieldsSchema.safeParse(
      Object.fromEntries(Object.entries(fields).filter(([, value]) => value !== '')),
    );
    if (!parsed.success)
      return 'The discard form needs the event and a reason; open it again from the event and say why.';
    if (!endpoints.includes(parsed.data.endpoint))
      return `No endpoint named ${parsed.data.endpoint} is configured.`;
    return { endpoint: parsed.data.endpoint, eventId: parsed.data.event_id, reason: parsed.data.reason };
  },
  fields(target) {
    return { endpoint: target.endpoint, event_id: target.eventId, reason: target.reason };
  },
  async preview(context, target) {
    // The dry run is discard's own, so the audit trail records it too.
    const summary = await discard(context.pool, requestOf(target, consoleActor(context.viewer.name), true));
    return {
      count: summary.count,
      summary: `Would discard ${summary.count} event ${target.eventId} of ${target.endpoint} for good (kept as discarded, never applied), because: ${target.reason}.`,
      sample: (summary.candidates ?? []).map((candidate) => ({
        label: candidate.event_id,
        endpoint: target.endpoint,
        eventId: candidate.event_id,
        note: `${candidate.status}, ${candidate.attempts} attempt(s)`,
      })),
    };
  },
  async run(context, target) {
    const summary = await discard(context.pool, requestOf(target, consoleActor(context.viewer.name), false));
    return {
      changed: summary.count,
      message:
        summary.count > 0
          ? `Discarded ${summary.count} event(s) of ${target.endpoint}.`
          : `Nothing was discarded: event ${target.eventId} of ${target.endpoint} is not parked or dead now.`,
      back: consolePath(['events', target.endpoint, target.eventId]),
    };
  },
};
