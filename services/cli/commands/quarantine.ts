import { z } from 'zod';
import { resolveActor } from '../../core/audit/actor.ts';
import { HookgateError } from '../../core/errors.ts';
import {
  dropQuarantined,
  listQuarantined,
  type QuarantinedRow,
  releaseQuarantined,
  showQuarantined,
} from '../../core/quarantine/actions.ts';
import { withCommandPool } from '../database.ts';
import { plural, printJson, table } from '../support/format.ts';
import { commandConfig, endpointName } from '../support/options.ts';
import { terminalText, writeErr, writeOut } from '../support/terminal-text.ts';

// `hookgate quarantine list|show|release|drop`: each a thin caller of one function of
// services/core/quarantine/actions.ts.

const ids = z
  .array(z.string().regex(/^[1-9]\d{0,17}$/, 'must be a quarantine id (a positive integer)'))
  .min(1);

const common = {
  json: z.boolean().optional(),
  config: z.string().min(1).optional(),
};

const listSchema = z.strictObject({
  ...common,
  endpoint: endpointName.optional(),
  all: z.boolean().optional(),
  limit: z.coerce.number().int().min(1).max(10_000).default(100),
});

const state = (row: QuarantinedRow) => (row.released_at ? 'released' : row.dropped_at ? 'dropped' : 'held');

/** `hookgate quarantine list`: held deliveries (every one with --all), newest first. */
export async function quarantineListCommand(raw: unknown): Promise<void> {
  const options = listSchema.parse(raw);
  await withCommandPool('quarantine-list', 60_000, async (pool) => {
    const rows = await listQuarantined(pool, options);
    if (options.json) return printJson(rows);
    writeOut(
      `${table(
        ['ID', 'ENDPOINT', 'RECEIVED', 'REASON', 'BYTES', 'STATE'],
        rows.map((row) => [
          row.id,
          row.endpoint,
          row.received_at.toISOString(),
          row.reason,
          String(row.body_bytes),
          state(row),
        ]),
      )}\n`,
    );
  });
}

/** `hookgate quarantine show ID…`: the rows, their kept headers and bodies. */
export async function quarantineShowCommand(rawIds: unknown, raw: unknown): Promise<void> {
  const options = z.strictObject(common).parse(raw);
  const wanted = ids.parse(rawIds);
  await withCommandPool('quarantine-show', 60_000, async (pool) => {
    const rows = await showQuarantined(pool, wanted);
    if (rows.length === 0)
      throw new HookgateError('not_found', `No quarantined delivery has id ${wanted.join(', ')}.`);
    if (options.json) return printJson(rows.map((row) => ({ ...row, body: row.body.toString('utf8') })));
    for (const row of rows) {
      writeOut(
        [
          `id ${row.id}  endpoint ${terminalText(row.endpoint)}  ${state(row)}`,
          `received ${row.received_at.toISOString()}  reason ${row.reason}: ${terminalText(row.message)}`,
          ...(row.settled_by
            ? [
                `${state(row)} by ${terminalText(row.settled_by)}${row.settle_reason ? `: ${terminalText(row.settle_reason)}` : ''}`,
              ]
            : []),
          'headers:',
          ...Object.entries(row.headers).map(([name, value]) => `  ${name}: ${terminalText(value)}`),
          `body (${row.body_bytes} bytes):`,
          terminalText(row.body.toString('utf8')),
          '',
        ].join('\n') + '\n',
      );
    }
  });
}

const actSchema = z.strictObject({
  ...common,
  actor: z.string().min(1).max(200).optional(),
  reason: z.string().trim().min(1).max(1000).optional(),
});

/** `hookgate quarantine release ID…`: claim again with the current config. */
export async function quarantineReleaseCommand(rawIds: unknown, raw: unknown): Promise<void> {
  const options = actSchema.parse(raw);
  const wanted = ids.parse(rawIds);
  const config = commandConfig(options.config, true)!;
  await withCommandPool('quarantine-release', 60_000, async (pool) => {
    const outcomes = await releaseQuarantined(pool, config, {
      ids: wanted,
      actor: resolveActor(options.actor),
      reason: options.reason,
    });
    if (options.json) return printJson(outcomes);
    for (const outcome of outcomes) {
      const what =
        outcome.outcome === 'still_unusable'
          ? `still held: ${outcome.reason}: ${outcome.message ?? ''}`
          : outcome.outcome === 'not_held'
            ? `not held: ${outcome.reason ?? 'not_found'}: ${outcome.message ?? ''}`
            : `released as event ${outcome.eventId ?? ''} (${outcome.outcome})`;
      writeOut(`${outcome.id}: ${terminalText(what)}\n`);
    }
    if (!outcomes.some((o) => o.outcome === 'accepted' || o.outcome === 'duplicate')) {
      // Settled meanwhile by someone else (a drop racing this release): say who and when.
      const settled = outcomes.find((o) => o.reason === 'quarantine_settled');
      if (settled) throw new HookgateError('quarantine_settled', settled.message ?? 'Not held any more.');
      throw new HookgateError('nothing_changed', 'No quarantined delivery was released.');
    }
  });
}

/** `hookgate quarantine drop ID… --reason …`: give up held deliveries for good. */
export async function quarantineDropCommand(rawIds: unknown, raw: unknown): Promise<void> {
  const options = actSchema
    .extend({
      reason: z
        .string({ error: () => 'is required: say why (--reason "…")' })
        .trim()
        .min(1)
        .max(1000),
    })
    .parse(raw);
  const wanted = ids.parse(rawIds);
  await withCommandPool('quarantine-drop', 60_000, async (pool) => {
    const { dropped, notDropped } = await dropQuarantined(pool, {
      ids: wanted,
      actor: resolveActor(options.actor),
      reason: options.reason,
    });
    if (options.json) return printJson({ dropped, not_dropped: notDropped });
    for (const skipped of notDropped)
      writeErr(`hookgate: ${skipped.code}: ${terminalText(skipped.message)}\n`);
    if (dropped.length === 0) {
      // Settled meanwhile by someone else (a release racing this drop): say who and when.
      const settled = notDropped.find((skipped) => skipped.code === 'quarantine_settled');
      if (settled) throw new HookgateError('quarantine_settled', settled.message);
      throw new HookgateError('nothing_changed', 'No held quarantined delivery has those ids.');
    }
    writeOut(
      `Dropped ${plural(dropped.length, 'quarantined delivery', 'quarantined deliveries')} (id ${dropped.join(', ')}).\n`,
    );
  });
}
