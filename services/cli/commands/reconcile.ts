import { z } from 'zod';
import { resolveActor } from '../../core/audit/actor.ts';
import type { Config } from '../../core/config/schema.ts';
import { HookgateError } from '../../core/errors.ts';
import { createLogger } from '../../core/logging.ts';
import { ensureQueues, retryPolicyFrom } from '../../core/queue/queues.ts';
import { type ReconcileReport, reconcileEndpoint } from '../../core/reconcile/run.ts';
import { type ReconcileState, readStates } from '../../core/reconcile/state-sql.ts';
import { replaySourceFor } from '../../core/replay/source-for.ts';
import { withCommandPool, withCommandQueue } from '../database.ts';
import { printJson, table } from '../support/format.ts';
import { commandConfig, endpointName, pointInTime, requireEndpoint } from '../support/options.ts';
import { writeErr, writeOut } from '../support/terminal-text.ts';

export const reconcileOptionsSchema = z.strictObject({
  endpoint: endpointName,
  since: pointInTime().optional(),
  dryRun: z.boolean().optional(),
  force: z.boolean().optional(),
  json: z.boolean().optional(),
  config: z.string().min(1).optional(),
  actor: z.string().min(1).max(200).optional(),
});

export const reconcileStatusOptionsSchema = z.strictObject({
  what: z.literal('status'),
  json: z.boolean().optional(),
  // Accepted (the command's option) but unused: reading the status is not an action.
  actor: z.string().min(1).max(200).optional(),
  config: z.string().min(1).optional(),
});

const iso = (date: Date | null) => (date ? date.toISOString() : null);

function reportJson(report: ReconcileReport) {
  return {
    endpoint: report.endpoint,
    dry_run: report.dryRun,
    outcome: report.outcome,
    error: report.error,
    from: report.from.toISOString(),
    until: report.until.toISOString(),
    listed: report.listed,
    present: report.present,
    filled: report.filled,
    unusable: report.unusable,
    delivery_failures: report.deliveryFailures,
    api_calls: report.apiCalls,
    duration_ms: Math.round(report.durationMs),
    gap_free_since: iso(report.coveredSince),
    gap_free_until: iso(report.watermark),
    problems: report.problems,
  };
}

function reconciledEndpoint(config: Config, name: string) {
  requireEndpoint(config, name);
  const endpoint = config.endpoints[name]!;
  if (!endpoint.reconcile) {
    throw new HookgateError(
      'usage_invalid',
      `Endpoint ${name} does not reconcile: add endpoints.${name}.reconcile (docs/reconcile.md).`,
    );
  }
  return endpoint;
}

/**
 * `hookgate reconcile --endpoint E`: one reconciliation run now, as a worker's scheduled run
 * would make it (the same lease: never at the same time as another run of the endpoint).
 */
export async function reconcileCommand(raw: unknown): Promise<void> {
  const options = reconcileOptionsSchema.parse(raw);
  const config = commandConfig(options.config, true)!;
  const endpoint = reconciledEndpoint(config, options.endpoint);
  const source = replaySourceFor(options.endpoint, endpoint);
  const actor = resolveActor(options.actor);
  writeErr(
    `hookgate: reconciling ${options.endpoint} against ${source.description}${options.dryRun ? ' (dry run)' : ''}\n`,
  );
  const report = options.dryRun
    ? await withCommandPool('reconcile', 60_000, (pool) =>
        reconcileEndpoint(pool, null, options.endpoint, endpoint, source, {
          dryRun: true,
          actor,
          horizonMs: config.dedupe.horizon,
          force: options.force === true,
          ...(options.since ? { since: options.since } : {}),
        }),
      )
    : await withCommandQueue('reconcile', 60_000, createLogger(undefined, 2), async (pool, boss) => {
        await ensureQueues(boss, [options.endpoint], retryPolicyFrom(config.worker));
        return await reconcileEndpoint(pool, boss, options.endpoint, endpoint, source, {
          actor,
          horizonMs: config.dedupe.horizon,
          force: options.force === true,
          ...(options.since ? { since: options.since } : {}),
        });
      });
  if (options.json) printJson(reportJson(report));
  else {
    const verb = report.dryRun ? 'would be filled' : 'filled';
    writeOut(
      `Listed ${report.listed} event(s) from ${report.from.toISOString()} to ${report.until.toISOString()}: ` +
        `${report.present} present, ${report.filled} missing (${verb}), ${report.deliveryFailures} with a failed delivery at the provider; ` +
        `${report.apiCalls} API request(s) in ${(report.durationMs / 1000).toFixed(1)}s. Outcome: ${report.outcome}${report.error ? ` (${report.error})` : ''}. ` +
        `Gap-free until: ${iso(report.watermark) ?? 'not yet'}.\n`,
    );
  }
  if (report.outcome === 'failed' || report.outcome === 'lease_lost' || report.unusable > 0)
    process.exitCode = 1;
}

function statusJson(state: ReconcileState) {
  return {
    endpoint: state.endpoint,
    gap_free_since: iso(state.coveredSince),
    gap_free_until: iso(state.watermark),
    running: state.running,
    last_run_started_at: iso(state.lastRunStartedAt),
    last_run_finished_at: iso(state.lastRunFinishedAt),
    last_outcome: state.lastOutcome,
    last_error: state.lastError,
    last_success_at: iso(state.lastSuccessAt),
    last_listed: state.last.listed,
    last_present: state.last.present,
    last_filled: state.last.filled,
    last_unusable: state.last.unusable,
    last_delivery_failures: state.last.deliveryFailures,
    last_api_calls: state.last.apiCalls,
    last_duration_ms: state.last.durationMs,
    missing_total: state.missingTotal,
    runs_total: state.runsTotal,
  };
}

/** `hookgate reconcile status`: each reconciling endpoint's watermark and last run. */
export async function reconcileStatusCommand(raw: unknown): Promise<void> {
  const what = (raw as { what?: unknown } | null)?.what;
  if (what !== 'status') {
    throw new HookgateError(
      'usage_invalid',
      `"${String(what)}" is not an action of reconcile: use "reconcile status", or "reconcile --endpoint E" for a run.`,
    );
  }
  const options = reconcileStatusOptionsSchema.parse(raw);
  const config = commandConfig(options.config, false);
  const configured = config
    ? Object.entries(config.endpoints)
        .filter(([, endpoint]) => endpoint.reconcile !== undefined)
        .map(([name]) => name)
    : [];
  await withCommandPool('reconcile-status', 30_000, async (pool) => {
    const states = new Map((await readStates(pool)).map((state) => [state.endpoint, statusJson(state)]));
    // Configured but never run: shown, so a schedule that never ran is visible.
    for (const name of configured) {
      if (!states.has(name)) states.set(name, { ...statusJson(neverRun(name)) });
    }
    const rows = [...states.values()].sort((a, b) => (a.endpoint < b.endpoint ? -1 : 1));
    if (options.json) {
      printJson({ endpoints: rows });
      return;
    }
    writeOut(
      table(
        [
          'ENDPOINT',
          'GAP-FREE-UNTIL',
          'LAST-RUN',
          'OUTCOME',
          'LISTED',
          'PRESENT',
          'FILLED',
          'FAILED-AT-PROVIDER',
          'CALLS',
          'MISSING-TOTAL',
        ],
        rows.map((row) => [
          row.endpoint,
          row.gap_free_until ?? '-',
          row.last_run_finished_at ?? (row.running ? 'running' : '-'),
          row.last_outcome ?? '-',
          String(row.last_listed),
          String(row.last_present),
          String(row.last_filled),
          String(row.last_delivery_failures),
          String(row.last_api_calls),
          String(row.missing_total),
        ]),
      ),
    );
  });
}

function neverRun(endpoint: string): ReconcileState {
  return {
    endpoint,
    coveredSince: null,
    watermark: null,
    running: false,
    lastRunStartedAt: null,
    lastRunFinishedAt: null,
    lastOutcome: null,
    lastError: null,
    lastSuccessAt: null,
    last: { listed: 0, present: 0, filled: 0, unusable: 0, deliveryFailures: 0, apiCalls: 0, durationMs: 0 },
    missingTotal: 0,
    runsTotal: 0,
  };
}
