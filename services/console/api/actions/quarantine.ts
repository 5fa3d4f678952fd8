import { z } from 'zod';
import { recordAction } from '../../../core/audit/audit.ts';
import { HookgateError } from '../../../core/errors.ts';
import {
  dropQuarantined,
  type QuarantinedDelivery,
  releaseQuarantined,
  showQuarantined,
} from '../../../core/quarantine/actions.ts';
import type { ActionCall, ApiAction } from '../action-runner.ts';
import { checkIfMatch } from '../etag.ts';
import { quarantineEtag } from '../states.ts';

// Release and drop of one held delivery: `hookgate quarantine release|drop`'s functions
// (services/core/quarantine/actions.ts). Their dry runs count the held delivery (1 or 0) and are
// audited as dry runs, as the console's are.

const releaseBody = z.strictObject({ reason: z.string().trim().min(1).max(1_000).optional() });
const dropBody = z.strictObject({ reason: z.string().trim().min(1).max(1_000) });

/** The delivery the path names, on a configured endpoint; `not_found` otherwise. */
async function quarantined(call: ActionCall<unknown>): Promise<QuarantinedDelivery> {
  const id = call.params.quarantine_id!;
  const [row] = await showQuarantined(call.pool, [id]);
  if (!row || !call.endpoints.includes(row.endpoint))
    throw new HookgateError('not_found', `No quarantined delivery ${id} on a configured endpoint.`);
  checkIfMatch(call.ifMatch, quarantineEtag(row), `Quarantined delivery ${id}`);
  return row;
}

const held = (row: QuarantinedDelivery) => !row.released_at && !row.dropped_at;

async function dryRun(
  call: ActionCall<{ readonly reason?: string | undefined }>,
  command: 'quarantine release' | 'quarantine drop',
) {
  const row = await quarantined(call);
  const count = held(row) ? 1 : 0;
  await recordAction(call.pool, {
    actor: call.actor,
    command,
    endpoint: row.endpoint,
    filters: { ids: [row.id] },
    count,
    dryRun: true,
    reason: call.body.reason,
  });
  return { row, count };
}

export const releaseQuarantinedAction: ApiAction<z.output<typeof releaseBody>> = {
  body: releaseBody,
  async run(call) {
    if (call.dryRun) {
      const { row, count } = await dryRun(call, 'quarantine release');
      return {
        result: {
          action: 'quarantine release',
          dry_run: true,
          count,
          ids: count ? [row.id] : [],
          message: count
            ? `Would release delivery ${row.id} of ${row.endpoint} (held as ${row.reason}) through the normal claim with this console's configuration (dry run, nothing changed).`
            : `Quarantined delivery ${row.id} is not held now: nothing would change.`,
        },
      };
    }
    const row = await quarantined(call);
    const outcomes = await releaseQuarantined(call.pool, call.config, {
      ids: [row.id],
      actor: call.actor,
      reason: call.body.reason,
    });
    const released = outcomes.filter((o) => o.outcome === 'accepted' || o.outcome === 'duplicate');
    const [outcome] = outcomes;
    return {
      result: {
        action: 'quarantine release',
        dry_run: false,
        count: released.length,
        ids: released.map((o) => o.id),
        outcomes: outcomes.map((o) => ({
          id: o.id,
          outcome: o.outcome,
          ...(o.eventId !== undefined ? { event_id: o.eventId } : {}),
          ...(o.reason !== undefined ? { reason: o.reason } : {}),
          ...(o.message !== undefined ? { message: o.message } : {}),
        })),
        message:
          released.length > 0
            ? `Released delivery ${row.id}: event ${outcome?.eventId ?? ''} claimed into the inbox (${outcome?.outcome}).`
            : outcome?.outcome === 'still_unusable'
              ? `Delivery ${row.id} stays held: ${outcome.reason ?? ''}: ${outcome.message ?? ''}`
              : `Nothing was released: delivery ${row.id} is not held now.`,
      },
    };
  },
};

export const dropQuarantinedAction: ApiAction<z.output<typeof dropBody>> = {
  body: dropBody,
  async run(call) {
    if (call.dryRun) {
      const { row, count } = await dryRun(call, 'quarantine drop');
      return {
        result: {
          action: 'quarantine drop',
          dry_run: true,
          count,
          ids: count ? [row.id] : [],
          message: count
            ? `Would drop delivery ${row.id} of ${row.endpoint} for good (kept, marked dropped, never claimed), because: ${call.body.reason} (dry run, nothing changed).`
            : `Quarantined delivery ${row.id} is not held now: nothing would change.`,
        },
      };
    }
    const row = await quarantined(call);
    const { dropped, notDropped } = await dropQuarantined(call.pool, {
      ids: [row.id],
      actor: call.actor,
      reason: call.body.reason,
    });
    return {
      result: {
        action: 'quarantine drop',
        dry_run: false,
        count: dropped.length,
        ids: dropped,
        message:
          dropped.length > 0
            ? `Dropped delivery ${row.id} for good: ${call.body.reason}.`
            : (notDropped[0]?.message ?? `Nothing was dropped: delivery ${row.id} is not held now.`),
      },
    };
  },
};
