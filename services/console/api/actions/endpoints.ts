import { z } from 'zod';
import { recordAction } from '../../../core/audit/audit.ts';
import { pausedEndpoints, pauseEndpoint, resumeEndpoint } from '../../../core/pause/pause.ts';
import type { ActionCall, ApiAction } from '../action-runner.ts';
import { checkIfMatch } from '../etag.ts';
import { requireEndpoint } from '../lookups.ts';
import { endpointEtag } from '../states.ts';

// Pause and resume of an endpoint: `hookgate pause|resume`'s functions (services/core/pause/pause.ts).
// Their dry run reads the pause now (what the run would change) and is audited as a dry run.

const body = z.strictObject({ reason: z.string().trim().min(1).max(1_000).optional() });
type Body = z.output<typeof body>;

async function current(call: ActionCall<Body>) {
  const endpoint = requireEndpoint(call.endpoints, call.params.endpoint!);
  const pause = (await pausedEndpoints(call.pool)).find((state) => state.endpoint === endpoint) ?? null;
  checkIfMatch(call.ifMatch, endpointEtag(pause), `The pause of ${endpoint}`);
  return { endpoint, pause };
}

export const pauseEndpointAction: ApiAction<Body> = {
  body,
  async run(call) {
    const { endpoint, pause } = await current(call);
    if (call.dryRun) {
      const paused = pause !== null;
      await recordAction(call.pool, {
        actor: call.actor,
        command: 'pause',
        endpoint,
        filters: {},
        count: paused ? 0 : 1,
        dryRun: true,
        reason: call.body.reason,
      });
      return {
        result: {
          action: 'pause',
          dry_run: true,
          count: paused ? 0 : 1,
          ids: paused ? [] : [endpoint],
          message: paused
            ? `${endpoint} is already paused (by ${pause?.paused_by ?? 'someone'}): nothing would change.`
            : `Would pause ${endpoint}: workers would apply none of its events until it is resumed; the gateway keeps accepting them (dry run, nothing changed).`,
        },
      };
    }
    const summary = await pauseEndpoint(call.pool, { endpoint, actor: call.actor, reason: call.body.reason });
    return {
      result: {
        action: 'pause',
        dry_run: false,
        count: summary.changed ? 1 : 0,
        ids: summary.changed ? [endpoint] : [],
        message: summary.changed
          ? `Paused ${endpoint}: its events are held until it is resumed.`
          : `${endpoint} was already paused (by ${summary.pause?.paused_by ?? 'someone'}): nothing changed.`,
      },
    };
  },
};

export const resumeEndpointAction: ApiAction<Body> = {
  body,
  async run(call) {
    const { endpoint, pause } = await current(call);
    if (call.dryRun) {
      await recordAction(call.pool, {
        actor: call.actor,
        command: 'resume',
        endpoint,
        filters: pause ? { paused_at: pause.paused_at.toISOString(), paused_by: pause.paused_by } : {},
        count: pause ? 1 : 0,
        dryRun: true,
        reason: call.body.reason,
      });
      return {
        result: {
          action: 'resume',
          dry_run: true,
          count: pause ? 1 : 0,
          ids: pause ? [endpoint] : [],
          message: pause
            ? `Would resume ${endpoint} (paused by ${pause.paused_by}): its held events would be applied in their order (dry run, nothing changed).`
            : `${endpoint} is not paused: nothing would change.`,
        },
      };
    }
    const summary = await resumeEndpoint(call.pool, {
      endpoint,
      actor: call.actor,
      reason: call.body.reason,
    });
    return {
      result: {
        action: 'resume',
        dry_run: false,
        count: summary.changed ? 1 : 0,
        ids: summary.changed ? [endpoint] : [],
        message: summary.changed
          ? `Resumed ${endpoint}: its held events are applied in their order.`
          : `${endpoint} was not paused: nothing changed.`,
      },
    };
  },
};
