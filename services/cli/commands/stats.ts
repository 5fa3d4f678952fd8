import { z } from 'zod';
import type { Config } from '../../core/config/schema.ts';
import { destinationStats } from '../../core/destinations/actions.ts';
import { destinationLabel } from '../../core/destinations/routes.ts';
import { collectStats, type StatsReport } from '../../core/read-models/stats.ts';
import { withCommandPool } from '../database.ts';
import { checkEndpointFilter } from '../support/endpoints.ts';
import { age, percent, printJson, table } from '../support/format.ts';
import { commandConfig, endpointName, pointInTime, requireEndpoint } from '../support/options.ts';
import { writeOut } from '../support/terminal-text.ts';

export const statsOptionsSchema = z.strictObject({
  endpoint: endpointName.optional(),
  since: pointInTime(),
  json: z.boolean().optional(),
  config: z.string().min(1).optional(),
});

export function renderStats(report: StatsReport, windowLabel: string): string {
  const rows = report.endpoints.map((s) => [
    s.endpoint,
    String(s.pending),
    age(s.oldest_pending_age_seconds),
    String(s.parked),
    String(s.dead),
    String(s.processed),
    String(s.ignored),
    String(s.stale),
    String(s.discarded),
    String(s.test),
    String(s.accepted),
    String(s.duplicate),
    percent(s.duplicate_rate),
    age(s.latency_p50_seconds),
    age(s.latency_p99_seconds),
    s.paused ? `${age(s.paused_seconds)} by ${s.paused_by}` : '-',
  ]);
  const header = [
    'ENDPOINT',
    'PENDING',
    'OLDEST',
    'PARKED',
    'DEAD',
    'PROCESSED',
    'IGNORED',
    'STALE',
    'DISCARDED',
    'TEST',
    'ACCEPTED',
    'DUPLICATES',
    'DUP-RATE',
    'P50',
    'P99',
    'PAUSED',
  ];
  const gapFree = report.reconcile.map(
    (row) =>
      `  ${row.endpoint}: gap-free until ${row.gap_free_until ?? 'not yet'} (last complete run ${row.last_success_at ?? 'none yet'})\n`,
  );
  return `Backlog now; deliveries and latency since ${report.since} (${windowLabel}).\n\n${table(header, rows)}${
    gapFree.length > 0 ? `\nReconciliation (hookgate reconcile status):\n${gapFree.join('')}` : ''
  }`;
}

/** `hookgate stats`: what an on-call engineer looks at first. */
/** Per destination: waiting, held and dead now; delivered in the window and its p99; breaker. */
function renderDestinationStats(
  rows: Awaited<ReturnType<typeof destinationStats>>,
  config: Pick<Config, 'endpoints'> | null,
): string {
  return table(
    ['ENDPOINT', 'DESTINATION', 'WAITING', 'HELD', 'DEAD', 'DELIVERED', 'P99', 'BREAKER', 'PAUSED'],
    rows.map((row) => [
      row.endpoint,
      destinationLabel(config, row.endpoint, row.destination),
      String(row.waiting),
      String(row.held),
      String(row.dead),
      String(row.delivered),
      age(row.p99_seconds),
      row.breaker,
      row.paused
        ? `${age((Date.now() - row.paused.since.getTime()) / 1000)} by ${row.paused.by}${row.paused.reason ? `: ${row.paused.reason}` : ''}`
        : '-',
    ]),
  );
}

export async function statsCommand(raw: unknown): Promise<void> {
  const options = statsOptionsSchema.parse(raw);
  const config = commandConfig(options.config, false);
  // Against the configuration before any connection: a typo is a usage error even with the database down.
  if (config && options.endpoint !== undefined) requireEndpoint(config, options.endpoint);
  await withCommandPool('stats', 30_000, async (pool) => {
    await checkEndpointFilter(pool, config, options.endpoint);
    const report = await collectStats(
      pool,
      options.since,
      options.endpoint ?? null,
      config ? Object.keys(config.endpoints) : [],
    );
    const destinations = await destinationStats(pool, config, options.since, options.endpoint ?? null);
    // The destinations' part only where there are destinations: the report is unchanged otherwise.
    if (options.json) printJson(destinations.length > 0 ? { ...report, destinations } : report);
    else {
      writeOut(renderStats(report, `--since ${(raw as { since?: string }).since ?? '1h'}`));
      if (destinations.length > 0) writeOut(`\n${renderDestinationStats(destinations, config)}`);
    }
  });
}
