import { z } from 'zod';
import { resolveActor } from '../../core/audit/actor.ts';
import { createLogger } from '../../core/logging.ts';
import { ensureQueues, retryPolicyFrom } from '../../core/queue/queues.ts';
import { checkWindow, replayEvents } from '../../core/replay/run.ts';
import { replaySourceFor } from '../../core/replay/source-for.ts';
import { withCommandPool, withCommandQueue } from '../database.ts';
import { printJson } from '../support/format.ts';
import { commandConfig, endpointName, pointInTime, requireEndpoint } from '../support/options.ts';
import { progressBar } from '../support/progress.ts';
import { writeErr, writeOut } from '../support/terminal-text.ts';

export const replayOptionsSchema = z.strictObject({
  endpoint: endpointName,
  since: pointInTime(),
  until: pointInTime().optional(),
  dryRun: z.boolean().optional(),
  force: z.boolean().optional(),
  actor: z.string().min(1).max(200).optional(),
  json: z.boolean().optional(),
  config: z.string().min(1).optional(),
});

/**
 * `hookgate replay`: fills the gap an outage left by pulling the window's events from the
 * provider's API through the gateway's claim. What is there already is absorbed.
 */
export async function replayCommand(raw: unknown): Promise<void> {
  const options = replayOptionsSchema.parse(raw);
  const config = commandConfig(options.config, true)!;
  requireEndpoint(config, options.endpoint);
  const endpoint = config.endpoints[options.endpoint]!;
  const window = { since: options.since, until: options.until ?? new Date() };
  checkWindow(window);
  const source = replaySourceFor(options.endpoint, endpoint);
  const logger = createLogger(undefined, 2);
  const actor = resolveActor(options.actor);
  writeErr(
    `hookgate: replaying ${options.endpoint} from ${source.description}, ${window.since.toISOString()} to ${window.until.toISOString()}${options.dryRun ? ' (dry run)' : ''}\n`,
  );
  const progress = progressBar('fetched');
  let report: Awaited<ReturnType<typeof replayEvents>>;
  try {
    let previous = 0;
    const onPage = (fetched: number) => {
      progress.advance(fetched - previous);
      previous = fetched;
    };
    report = options.dryRun
      ? await withCommandPool('replay', 60_000, (pool) =>
          replayEvents(pool, null, options.endpoint, endpoint, source, window, {
            dryRun: true,
            onPage,
            actor,
            horizonMs: config.dedupe.horizon,
            force: options.force === true,
          }),
        )
      : await withCommandQueue('replay', 60_000, logger, async (pool, boss) => {
          await ensureQueues(boss, [options.endpoint], retryPolicyFrom(config.worker));
          return await replayEvents(pool, boss, options.endpoint, endpoint, source, window, {
            onPage,
            actor,
            horizonMs: config.dedupe.horizon,
            force: options.force === true,
          });
        });
  } finally {
    progress.stop();
  }
  if (options.json) {
    printJson({
      endpoint: options.endpoint,
      since: window.since.toISOString(),
      until: window.until.toISOString(),
      dry_run: options.dryRun === true,
      fetched: report.fetched,
      new: report.new,
      already_present: report.alreadyPresent,
      unusable: report.unusable,
      problems: report.problems,
    });
  } else {
    const verb = options.dryRun ? 'would be stored' : 'stored and queued';
    writeOut(
      `Fetched ${report.fetched} event(s): ${report.new} new (${verb}), ${report.alreadyPresent} already present${report.unusable ? `, ${report.unusable} unusable (${report.problems[0]})` : ''}.\n`,
    );
  }
  if (report.unusable > 0) process.exitCode = 1;
}
