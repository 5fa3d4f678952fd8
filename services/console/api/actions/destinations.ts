import { z } from 'zod';
import { recordAction } from '../../../core/audit/audit.ts';
import {
  destinationStats,
  pauseDestination,
  redeliver,
  resolveDestination,
  resumeDestination,
  showDelivery,
} from '../../../core/destinations/actions.ts';
import { destinationStates } from '../../../core/destinations/state.ts';
import { type ActionAnswer, type ActionCall, type ApiAction, firstIds } from '../action-runner.ts';
import { checkIfMatch } from '../etag.ts';
import { requireEndpoint } from '../lookups.ts';
import { numericId } from '../params.ts';
import { deliveryEtag, destinationEtag } from '../states.ts';

// A destination's pause and resume, and redelivery (of a destination's dead deliveries, or of one
// delivery read before): `hookgate destination pause|resume` and `hookgate redeliver`'s functions
// (services/core/destinations/actions.ts). Redeliver's dry run is that function's own; pause's
// and resume's read the state now and are audited as dry runs.

const empty = z.strictObject({});

async function target(call: ActionCall<unknown>) {
  const endpoint = requireEndpoint(call.endpoints, call.params.endpoint!);
  const named = resolveDestination(call.config, { endpoint, destination: call.params.destination! });
  const [state] = await destinationStates(call.pool, [named]);
  const [stats] = (await destinationStats(call.pool, call.config, new Date(), endpoint)).filter(
    (row) => row.destination === named.destination,
  );
  checkIfMatch(
    call.ifMatch,
    destinationEtag(state ?? null),
    `The pause of ${named.endpoint}/${named.destination}`,
  );
  return { ...named, paused: state?.paused === true, by: state?.changed_by ?? null, stats };
}

const reasonBody = z.strictObject({ reason: z.string().trim().min(1).max(1_000).optional() });

function setPausedAction(paused: boolean): ApiAction<z.output<typeof reasonBody>> {
  const action = paused ? 'destination pause' : 'destination resume';
  return {
    body: reasonBody,
    async run(call) {
      const { endpoint, destination, stats, ...state } = await target(call);
      const name = `${endpoint}/${destination}`;
      if (call.dryRun) {
        const changes = state.paused !== paused;
        const count = changes ? (paused ? (stats?.waiting ?? 0) : (stats?.held ?? 0)) : 0;
        await recordAction(call.pool, {
          actor: call.actor,
          command: action,
          endpoint,
          filters: { destination, was_paused: state.paused },
          count,
          dryRun: true,
          reason: call.body.reason,
        });
        return {
          result: {
            action,
            dry_run: true,
            count,
            ids: [],
            message: !changes
              ? `${name} is ${paused ? 'already paused' : 'not paused'}: nothing would change.`
              : paused
                ? `Would pause ${name}: its ${count} waiting deliveries would be held until it is resumed (dry run, nothing changed).`
                : `Would resume ${name} (paused by ${state.by ?? 'someone'}): its ${count} held deliveries would be due again at once (dry run, nothing changed).`,
          },
        };
      }
      const request = { endpoint, destination, actor: call.actor, reason: call.body.reason };
      const summary = paused
        ? await pauseDestination(call.pool, call.config, request)
        : await resumeDestination(call.pool, call.config, request);
      return {
        result: {
          action,
          dry_run: false,
          count: summary.count,
          ids: [],
          message:
            summary.wasPaused === paused
              ? `${name} was ${paused ? 'already paused' : 'not paused'}: nothing changed.`
              : paused
                ? `Paused ${name}: ${summary.count} deliveries held until it is resumed.`
                : `Resumed ${name}: ${summary.count} held deliveries are due again.`,
        },
      };
    },
  };
}

export const pauseDestinationAction = setPausedAction(true);
export const resumeDestinationAction = setPausedAction(false);

async function runRedeliver(
  call: ActionCall<unknown>,
  request: { endpoint: string; destination: string; ids?: string[] | undefined },
): Promise<ActionAnswer> {
  // Audited by redeliver itself, dry run or not.
  const summary = await redeliver(call.pool, call.config, {
    endpoint: request.endpoint,
    destination: request.destination,
    actor: call.actor,
    ...(request.ids ? { ids: request.ids, statuses: ['dead', 'delivered'] as const } : {}),
    dryRun: call.dryRun,
  });
  const name = `${summary.endpoint}/${summary.destination}`;
  const what = `${summary.count} ${summary.count === 1 ? 'delivery' : 'deliveries'} of ${name}`;
  return {
    result: {
      action: 'redeliver',
      dry_run: summary.dryRun,
      count: summary.count,
      ids: firstIds(summary.ids),
      message: summary.dryRun
        ? `Would send ${what} again, with the same webhook-id and Idempotency-Key and a fresh retry budget (dry run, nothing changed).`
        : summary.count > 0
          ? `Redelivering ${what}, with the same webhook-id and Idempotency-Key and a fresh retry budget.`
          : `Nothing to redeliver: no delivery of ${name} asked for is ${request.ids ? 'dead or delivered' : 'dead'} now.`,
    },
  };
}

const redeliverBody = z.strictObject({ delivery_ids: z.array(numericId).min(1).max(1_000).optional() });

export const redeliverDestination: ApiAction<z.output<typeof redeliverBody>> = {
  body: redeliverBody,
  run(call) {
    const endpoint = requireEndpoint(call.endpoints, call.params.endpoint!);
    const named = resolveDestination(call.config, { endpoint, destination: call.params.destination! });
    return runRedeliver(call, { ...named, ids: call.body.delivery_ids });
  },
};

export const redeliverDelivery: ApiAction<Record<string, never>> = {
  body: empty,
  async run(call) {
    const id = call.params.delivery_id!;
    const { delivery } = await showDelivery(call.pool, id);
    checkIfMatch(call.ifMatch, deliveryEtag(delivery), `Delivery ${id}`);
    return runRedeliver(call, { endpoint: delivery.endpoint, destination: delivery.destination, ids: [id] });
  },
};
