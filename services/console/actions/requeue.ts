import { z } from 'zod';
import { consoleActor } from '../../core/audit/actor.ts';
import { countRequeue, previewRequeue, type RequeueRequest, requeue } from '../../core/inbox/requeue.ts';
import { consolePath } from '../html/html.ts';
import type { ConsoleAction } from './registry.ts';

/** Parked or dead events back to work: `hookgate requeue`'s function (services/core/inbox/requeue.ts). */
const fieldsSchema = z.strictObject({
  endpoint: z.string().min(1).max(63),
  status: z.enum(['parked', 'dead', 'any']).default('any'),
  event_id: z.string().min(1).max(512).optional(),
  type: z.string().min(1).max(500).optional(),
  since: z.iso.datetime({ offset: true }).optional(),
  until: z.iso.datetime({ offset: true }).optional(),
});

export interface RequeueTarget {
  readonly endpoint: string;
  readonly status: 'parked' | 'dead' | 'any';
  readonly eventId?: string | undefined;
  readonly type?: string | undefined;
  readonly since?: string | undefined;
  readonly until?: string | undefined;
}

/** The most events one console requeue moves; the CLI's --limit goes further. */
const CONSOLE_LIMIT = 10_000;

function requestOf(target: RequeueTarget, actor: string): RequeueRequest {
  return {
    actor,
    endpoint: target.endpoint,
    statuses: target.status === 'any' ? ['parked', 'dead'] : [target.status],
    eventIds: target.eventId ? [target.eventId] : undefined,
    eventType: target.type,
    since: target.since ? new Date(target.since) : undefined,
    until: target.until ? new Date(target.until) : undefined,
    limit: CONSOLE_LIMIT,
  };
}

function describe(target: RequeueTarget): string {
  const what = target.eventId
    ? `event ${target.eventId}`
    : `${target.status === 'any' ? 'parked and dead' : target.status} events${target.type ? ` of type ${target.type}` : ''}`;
  const window =
    target.since || target.until
      ? ` received ${target.since ? `from ${target.since}` : ''}${target.until ? ` until ${target.until}` : ''}`
      : '';
  return `${what} of ${target.endpoint}${window}`;
}

export const requeueAction: ConsoleAction<RequeueTarget> = {
  id: 'requeue',
  title: 'Requeue',
  parse(fields, endpoints) {
    const parsed = fieldsSchema.safeParse(
      Object.fromEntries(Object.entries(fields).filter(([, value]) => value !== '')),
    );
    if (!parsed.success)
      return 'The requeue form is incomplete or malformed; open it again from the event or the list.';
    if (!endpoints.includes(parsed.data.endpoint))
      return `No endpoint named ${parsed.data.endpoint} is configured.`;
    const { event_id: eventId, ...rest } = parsed.data;
    return { ...rest, eventId };
  },
  fields(target) {
    const fields: Record<string, string> = { endpoint: target.endpoint, status: target.status };
    if (target.eventId) fields.event_id = target.eventId;
    if (target.type) fields.type = target.type;
    if (target.since) fields.since = target.since;
    if (target.until) fields.until = target.until;
    return fields;
  },
  async preview(context, target) {
    const request = requestOf(target, consoleActor(context.viewer.name));
    const [count, sample] = await Promise.all([
      countRequeue(context.pool, request),
      previewRequeue(context.pool, { ...request, limit: 20 }),
    ]);
    return {
      count,
      summary: `Would put ${count} ${describe(target)} back to pending, each with a fresh job and a full retry budget (attempts keep counting).`,
      sample: sample.map((candidate) => ({
        label: candidate.event_id,
        endpoint: target.endpoint,
        eventId: candidate.event_id,
        note: `${candidate.status}, ${candidate.attempts} attempt(s)`,
      })),
    };
  },
  async run(context, target) {
    const back = target.eventId
      ? consolePath(['events', target.endpoint, target.eventId])
      : consolePath(['events'], {
          endpoint: target.endpoint,
          status: target.status === 'any' ? undefined : target.status,
        });
    const ids = await requeue(context.pool, requestOf(target, consoleActor(context.viewer.name)));
    return {
      changed: ids.length,
      message:
        ids.length > 0
          ? `Requeued ${ids.length} event(s) of ${target.endpoint}.`
          : `Nothing was requeued: no ${describe(target)} is parked or dead now.`,
      back,
    };
  },
};
