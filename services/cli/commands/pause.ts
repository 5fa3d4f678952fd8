import { z } from 'zod';
import { resolveActor } from '../../core/audit/actor.ts';
import { HookgateError } from '../../core/errors.ts';
import { type PauseSummary, pauseEndpoint, resumeEndpoint } from '../../core/pause/pause.ts';
import { withCommandPool } from '../database.ts';
import { age, printJson } from '../support/format.ts';
import { commandConfig, endpointName, requireEndpoint } from '../support/options.ts';
import { writeOut } from '../support/terminal-text.ts';

export const pauseOptionsSchema = z.strictObject({
  endpoint: z
    .string({ error: () => 'is required: pause holds one endpoint at a time (e.g. --endpoint stripe)' })
    .pipe(endpointName),
  reason: z.string().trim().min(1).max(1000).optional(),
  actor: z.string().min(1).max(200).optional(),
  json: z.boolean().optional(),
  config: z.string().min(1).optional(),
});

function json(summary: PauseSummary, paused: boolean): void {
  printJson({
    endpoint: summary.endpoint,
    changed: summary.changed,
    paused,
    paused_at: summary.pause?.paused_at ?? null,
    paused_by: summary.pause?.paused_by ?? null,
    reason: summary.pause?.pause_reason ?? null,
  });
}

const since = (summary: PauseSummary) =>
  summary.pause
    ? `since ${summary.pause.paused_at.toISOString()} by ${summary.pause.paused_by}${summary.pause.pause_reason ? ` (${summary.pause.pause_reason})` : ''}`
    : '';

/** `hookgate pause`: hold an endpoint's processing; the gateway keeps accepting. */
export async function pauseCommand(raw: unknown): Promise<void> {
  const options = pauseOptionsSchema.parse(raw);
  const config = commandConfig(options.config, false);
  if (config) requireEndpoint(config, options.endpoint);
  await withCommandPool('pause', 60_000, async (pool) => {
    const summary = await pauseEndpoint(pool, {
      endpoint: options.endpoint,
      actor: resolveActor(options.actor),
      reason: options.reason,
    });
    if (options.json) json(summary, true);
    if (!summary.changed)
      throw new HookgateError('nothing_changed', `${options.endpoint} is already paused ${since(summary)}.`);
    if (!options.json)
      writeOut(
        `Paused ${options.endpoint}: workers apply none of its events until "hookgate resume --endpoint ${options.endpoint}"; the gateway keeps accepting them.\n`,
      );
  });
}

/** `hookgate resume`: release a paused endpoint's held events, in their order. */
export async function resumeCommand(raw: unknown): Promise<void> {
  const options = pauseOptionsSchema.parse(raw);
  const config = commandConfig(options.config, false);
  if (config) requireEndpoint(config, options.endpoint);
  await withCommandPool('resume', 60_000, async (pool) => {
    const summary = await resumeEndpoint(pool, {
      endpoint: options.endpoint,
      actor: resolveActor(options.actor),
      reason: options.reason,
    });
    if (options.json) json(summary, false);
    if (!summary.changed)
      throw new HookgateError('nothing_changed', `${options.endpoint} is not paused; nothing was resumed.`);
    if (!options.json)
      writeOut(
        `Resumed ${options.endpoint} (paused ${since(summary)}, for ${age((Date.now() - summary.pause!.paused_at.getTime()) / 1000)}): its held events are applied in their order.\n`,
      );
  });
}
