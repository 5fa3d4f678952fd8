import { z } from 'zod';
import { resolveActor } from '../../core/audit/actor.ts';
import { HookgateError } from '../../core/errors.ts';
import { type DiscardSummary, discard } from '../../core/inbox/discard.ts';
import { DISCARDABLE_STATUSES } from '../../core/inbox/status.ts';
import { withCommandPool } from '../database.ts';
import { age, printJson, table } from '../support/format.ts';
import { commandConfig, endpointName, pointInTime, requireEndpoint } from '../support/options.ts';
import { writeErr, writeOut } from '../support/terminal-text.ts';

export const discardOptionsSchema = z
  .strictObject({
    endpoint: z
      .string({
        error: () => "is required: discard settles one endpoint's events at a time (e.g. --endpoint stripe)",
      })
      .pipe(endpointName),
    status: z.enum(DISCARDABLE_STATUSES, { error: 'only parked or dead events are discarded' }).optional(),
    type: z.string().min(1).max(500).optional(),
    since: pointInTime().optional(),
    until: pointInTime().optional(),
    id: z.array(z.string().min(1).max(512)).max(10_000).optional(),
    reason: z
      .string({ error: () => 'is required: say why these events are dismissed (kept with them and audited)' })
      .trim()
      .min(1, 'must say why')
      .max(1000),
    limit: z.coerce.number().int().min(1).max(100_000).default(10_000),
    dryRun: z.boolean().optional(),
    actor: z.string().min(1).max(200).optional(),
    json: z.boolean().optional(),
    config: z.string().min(1).optional(),
  })
  .superRefine((options, ctx) => {
    // Discarding is final: it never defaults to "every stuck event of the endpoint".
    if (options.status === undefined && (options.id === undefined || options.id.length === 0))
      ctx.addIssue({
        code: 'custom',
        path: ['status'],
        message: 'or --id is required: name the status (dead or parked) or the events to discard',
      });
  });

function print(summary: DiscardSummary, json: boolean | undefined): void {
  if (json) {
    printJson({
      endpoint: summary.endpoint,
      dry_run: summary.dryRun,
      [summary.dryRun ? 'would_discard' : 'discarded']: summary.count,
      event_ids: summary.eventIds,
      not_discarded: summary.notDiscarded,
    });
    return;
  }
  if (!summary.dryRun) {
    if (summary.count > 0) writeOut(`Discarded ${summary.count} event(s) of ${summary.endpoint}.\n`);
    return;
  }
  writeOut(`Would discard ${summary.count} event(s) of ${summary.endpoint} (dry run, nothing changed).\n`);
  const candidates = summary.candidates ?? [];
  if (candidates.length === 0) return;
  const now = Date.now();
  writeOut(
    table(
      ['EVENT ID', 'TYPE', 'STATUS', 'ATTEMPTS', 'AGE', 'LAST ERROR'],
      candidates.map((c) => [
        c.event_id,
        c.event_type,
        c.status,
        String(c.attempts),
        age((now - c.received_at.getTime()) / 1000),
        (c.last_error ?? '-').replace(/\s+/g, ' ').slice(0, 60),
      ]),
    ),
  );
}

/** `hookgate discard`: parked/dead events settled for good, with who, why and when. */
export async function discardCommand(raw: unknown): Promise<void> {
  const options = discardOptionsSchema.parse(raw);
  const config = commandConfig(options.config, false);
  if (config) requireEndpoint(config, options.endpoint);
  await withCommandPool('discard', 60_000, async (pool) => {
    const summary = await discard(pool, {
      endpoint: options.endpoint,
      statuses: options.status ? [options.status] : DISCARDABLE_STATUSES,
      eventIds: options.id,
      eventType: options.type,
      since: options.since,
      until: options.until,
      limit: options.limit,
      reason: options.reason,
      actor: resolveActor(options.actor),
      dryRun: options.dryRun,
    });
    print(summary, options.json);
    const would = summary.dryRun ? 'nothing would be discarded' : 'nothing was discarded';
    if (summary.count === 0)
      throw new HookgateError(
        'nothing_changed',
        options.id && options.id.length > 0
          ? `None of ${options.id.join(', ')} is ${options.status ?? 'parked or dead'} on ${options.endpoint}; ${would} ("hookgate events show" tells where it is).`
          : `No ${options.status} event of ${options.endpoint} matches; ${would}.`,
      );
    if (summary.notDiscarded.length > 0)
      writeErr(`hookgate: not discarded (not parked/dead or unknown): ${summary.notDiscarded.join(', ')}\n`);
  });
}
