import { z } from 'zod';
import { consoleActor } from '../../core/audit/actor.ts';
import { type AuditedCommand, recordAction } from '../../core/audit/audit.ts';
import {
  dropQuarantined,
  type QuarantinedDelivery,
  releaseQuarantined,
  showQuarantined,
} from '../../core/quarantine/actions.ts';
import { consolePath } from '../html/html.ts';
import type { ActionContext, ActionPreview, ConsoleAction } from './registry.ts';

// Release and drop of one held delivery: `hookgate quarantine release|drop`'s functions
// (services/core/quarantine/actions.ts). Their dry runs count the held row and are audited as
// dry runs, like discard's.

const releaseSchema = z.strictObject({
  id: z.string().regex(/^\d{1,19}$/),
  reason: z.string().trim().min(1).max(1000).optional(),
});
const dropSchema = z.strictObject({
  id: z.string().regex(/^\d{1,19}$/),
  reason: z.string().trim().min(1).max(1000),
});

export interface QuarantineTarget {
  readonly id: string;
  readonly reason?: string | undefined;
}

function nonEmpty(fields: Readonly<Record<string, unknown>>): Record<string, unknown> {
  return Object.fromEntries(Object.entries(fields).filter(([, value]) => value !== ''));
}

async function heldRow(context: ActionContext, id: string): Promise<QuarantinedDelivery | undefined> {
  const [row] = await showQuarantined(context.pool, [id]);
  return row && !row.released_at && !row.dropped_at && context.endpoints.includes(row.endpoint)
    ? row
    : undefined;
}

async function dryRun(
  context: ActionContext,
  command: AuditedCommand,
  target: QuarantineTarget,
  sentence: (row: QuarantinedDelivery) => string,
): Promise<ActionPreview> {
  const row = await heldRow(context, target.id);
  await recordAction(context.pool, {
    actor: consoleActor(context.viewer.name),
    command,
    endpoint: row?.endpoint,
    filters: { ids: [target.id] },
    count: row ? 1 : 0,
    dryRun: true,
    reason: target.reason,
  });
  return {
    count: row ? 1 : 0,
    summary: row
      ? sentence(row)
      : `Quarantined delivery ${target.id} is not held now (released, dropped or unknown): nothing to do.`,
    confirmLabel: `${command === 'quarantine release' ? 'Release' : 'Drop'} 1 delivery`,
    sample: [],
  };
}

export const releaseQuarantinedAction: ConsoleAction<QuarantineTarget> = {
  id: 'quarantine-release',
  title: 'Release',
  parse(fields) {
    const parsed = releaseSchema.safeParse(nonEmpty(fields));
    if (!parsed.success)
      return 'The release form names no quarantined delivery; open it again from the quarantine page.';
    return { id: parsed.data.id, reason: parsed.data.reason };
  },
  fields(target): Record<string, string> {
    return target.reason === undefined ? { id: target.id } : { id: target.id, reason: target.reason };
  },
  preview(context, target) {
    return dryRun(
      context,
      'quarantine release',
      target,
      (row) =>
        `Would release 1 delivery ${row.id} of ${row.endpoint} (held as ${row.reason}) through the normal claim with this console's configuration: it enters the inbox if it now has a usable id and type, and stays held with the reason it fails for otherwise.`,
    );
  },
  async run(context, target) {
    const [outcome] = await releaseQuarantined(context.pool, context.config, {
      ids: [target.id],
      actor: consoleActor(context.viewer.name),
      reason: target.reason,
    });
    const released = outcome?.outcome === 'accepted' || outcome?.outcome === 'duplicate';
    const message = released
      ? `Released delivery ${target.id}: event ${outcome.eventId ?? ''} claimed into the inbox (${outcome.outcome}).`
      : outcome?.outcome === 'still_unusable'
        ? `Delivery ${target.id} stays held: ${outcome.reason ?? ''}: ${outcome.message ?? ''}`
        : (outcome?.message ?? `Nothing was released: delivery ${target.id} is not held now.`);
    return { changed: released ? 1 : 0, message, back: consolePath(['quarantine', target.id]) };
  },
};

export const dropQuarantinedAction: ConsoleAction<QuarantineTarget & { readonly reason: string }> = {
  id: 'quarantine-drop',
  title: 'Drop',
  parse(fields) {
    const parsed = dropSchema.safeParse(nonEmpty(fields));
    if (!parsed.success)
      return 'The drop form needs the quarantined delivery and a reason; open it again from the quarantine page and say why.';
    return { id: parsed.data.id, reason: parsed.data.reason };
  },
  fields(target) {
    return { id: target.id, reason: target.reason };
  },
  preview(context, target) {
    return dryRun(
      context,
      'quarantine drop',
      target,
      (row) =>
        `Would drop 1 delivery ${row.id} of ${row.endpoint} (held as ${row.reason}) for good (kept, marked dropped, never claimed), because: ${target.reason}.`,
    );
  },
  async run(context, target) {
    const { dropped, notDropped } = await dropQuarantined(context.pool, {
      ids: [target.id],
      actor: consoleActor(context.viewer.name),
      reason: target.reason,
    });
    return {
      changed: dropped.length,
      message:
        dropped.length > 0
          ? `Dropped delivery ${target.id}.`
          : (notDropped[0]?.message ?? `Nothing was dropped: delivery ${target.id} is not held now.`),
      back: consolePath(['quarantine', target.id]),
    };
  },
};
