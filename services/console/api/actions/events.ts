import { z } from 'zod';
import { recordAction } from '../../../core/audit/audit.ts';
import { discard } from '../../../core/inbox/discard.ts';
import { previewRequeue, type RequeueRequest, requeue, requeueFilters } from '../../../core/inbox/requeue.ts';
import { STUCK_STATUSES } from '../../../core/inbox/status.ts';
import { readEvent } from '../../../core/read-models/event-detail.ts';
import { type ActionAnswer, type ActionCall, type ApiAction, firstIds } from '../action-runner.ts';
import { checkIfMatch } from '../etag.ts';
import { requireEndpoint } from '../lookups.ts';
import { pointInTime } from '../params.ts';
import { eventEtag } from '../states.ts';

// Requeue and discard, of the events a selection matches (`POST /endpoints/{e}/requeue|discard`)
// or of one event read before (`POST /events/{e}/{id}/requeue|discard`, with If-Match): the
// functions of `hookgate requeue` and `hookgate discard` (services/core/inbox/).

const now = () => Date.now();
const selection = {
  event_ids: z.array(z.string().min(1).max(512)).min(1).max(10_000).optional(),
  type: z.string().min(1).max(500).optional(),
  since: pointInTime(now).optional(),
  until: pointInTime(now).optional(),
  limit: z.number().int().min(1).max(10_000).default(10_000),
};
const reason = z.string().trim().min(1).max(1_000);

async function runRequeue(call: ActionCall<unknown>, request: RequeueRequest): Promise<ActionAnswer> {
  const what = `event(s) of ${request.endpoint}`;
  if (call.dryRun) {
    // The dry run is the CLI's: the events a requeue would move now, audited as a dry run.
    const candidates = await previewRequeue(call.pool, request);
    const ids = candidates.map((candidate) => candidate.event_id);
    await recordAction(call.pool, {
      actor: request.actor,
      command: 'requeue',
      endpoint: request.endpoint,
      filters: requeueFilters(request),
      count: ids.length,
      dryRun: true,
      eventIds: ids,
    });
    return {
      result: {
        action: 'requeue',
        dry_run: true,
        count: ids.length,
        ids: firstIds(ids),
        message: `Would requeue ${ids.length} ${what}, each with a fresh job (dry run, nothing changed).`,
      },
    };
  }
  const ids = await requeue(call.pool, request);
  return {
    result: {
      action: 'requeue',
      dry_run: false,
      count: ids.length,
      ids: firstIds(ids),
      message:
        ids.length > 0
          ? `Requeued ${ids.length} ${what}, each with a fresh job.`
          : `Nothing was requeued: no ${request.statuses.join(' or ')} event of ${request.endpoint} matches now.`,
    },
  };
}

const requeueBody = z.strictObject({
  status: z.enum(['parked', 'dead', 'discarded']).optional(),
  ...selection,
});

export const requeueEvents: ApiAction<z.output<typeof requeueBody>> = {
  body: requeueBody,
  run(call) {
    const endpoint = requireEndpoint(call.endpoints, call.params.endpoint!);
    const body = call.body;
    return runRequeue(call, {
      actor: call.actor,
      endpoint,
      statuses: body.status ? [body.status] : STUCK_STATUSES,
      eventIds: body.event_ids,
      eventType: body.type,
      since: body.since,
      until: body.until,
      limit: body.limit,
    });
  },
};
export const requeueEvent: ApiAction<Record<string, never>> = {
  body: z.strictObject({}),
  async run(call) {
    const endpoint = requireEndpoint(call.endpoints, call.params.endpoint!);
    const eventId = call.params.event_id!;
    const event = await readEvent(call.pool, endpoint, eventId);
    checkIfMatch(call.ifMatch, eventEtag(event), `Event ${eventId}`);
    return runRequeue(call, {
      actor: call.actor,
      endpoint,
      statuses: STUCK_STATUSES,
      eventIds: [eventId],
      limit: 1,
    });
  },
};

const discardBody = z.strictObject({
  status: z.enum(['parked', 'dead']).optional(),
  reason,
  ...selection,
});

async function runDiscard(
  call: ActionCall<unknown>,
  request: Parameters<typeof discard>[1],
): Promise<ActionAnswer> {
  // Audited by discard itself, dry run or not.
  const summary = await discard(call.pool, request);
  const what = `event(s) of ${request.endpoint}`;
  return {
    result: {
      action: 'discard',
      dry_run: summary.dryRun,
      count: summary.count,
      ids: firstIds(summary.eventIds),
      message: summary.dryRun
        ? `Would discard ${summary.count} ${what} for good (dry run, nothing changed).`
        : summary.count > 0
          ? `Discarded ${summary.count} ${what} for good: ${request.reason}.`
          : `Nothing was discarded: no ${request.statuses.join(' or ')} event of ${request.endpoint} matches now.`,
    },
  };
}

export const discardEvents: ApiAction<z.output<typeof discardBody>> = {
  body: discardBody,
  run(call) {
    const endpoint = requireEndpoint(call.endpoints, call.params.endpoint!);
    const body = call.body;
    return runDiscard(call, {
      endpoint,
      statuses: body.status ? [body.status] : STUCK_STATUSES,
      eventIds: body.event_ids,
      eventType: body.type,
      since: body.since,
      until: body.until,
      limit: body.limit,
      reason: body.reason,
      actor: call.actor,
      dryRun: call.dryRun,
    });
  },
};

export const discardEvent: ApiAction<{ readonly reason: string }> = {
  body: z.strictObject({ reason }),
  async run(call) {
    const endpoint = requireEndpoint(call.endpoints, call.params.endpoint!);
    const eventId = call.params.event_id!;
    const event = await readEvent(call.pool, endpoint, eventId);
    checkIfMatch(call.ifMatch, eventEtag(event), `Event ${eventId}`);
    return runDiscard(call, {
      endpoint,
      statuses: STUCK_STATUSES,
      eventIds: [eventId],
      limit: 1,
      reason: call.body.reason,
      actor: call.actor,
      dryRun: call.dryRun,
    });
  },
};
