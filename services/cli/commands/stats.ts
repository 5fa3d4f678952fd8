import type pg from 'pg';
import { z } from 'zod';
import { destinationStats } from '../../core/destinations/actions.ts';
import { TEST_EVENT_TYPE } from '../../core/handlers/test-event.ts';
import { pausedEndpoints } from '../../core/pause/pause.ts';
import { BACKLOG_BY_ENDPOINT } from '../../core/read-models/backlog.ts';
import {
  DELIVERIES_IN_WINDOW,
  LATENCY_IN_WINDOW,
  SETTLED_IN_WINDOW,
} from '../../core/read-models/stats-sql.ts';
import { readStates } from '../../core/reconcile/state-sql.ts';
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

export interface EndpointStats {
  endpoint: string;
  pending: number;
  parked: number;
  dead: number;
  oldest_pending_age_seconds: number | null;
  /** Rows received in the window that have settled so (test events apart, in `test`). */
  processed: number;
  ignored: number;
  stale: number;
  /** Discarded by an operator (`hookgate discard`), among the events received in the window. */
  discarded: number;
  /** Test events (`hookgate.test`, settled `ignored` without business writes) received in the window. */
  test: number;
  /** Deliveries answered 200 in the window: stored now, or already stored. */
  accepted: number;
  duplicate: number;
  duplicate_rate: number | null;
  latency_p50_seconds: number | null;
  latency_p99_seconds: number | null;
  /** Paused by an operator (`hookgate pause`): its events are held, not failing. */
  paused: boolean;
  paused_at: string | null;
  paused_by: string | null;
  pause_reason: string | null;
  paused_seconds: number | null;
}

export interface StatsReport {
  since: string;
  endpoints: EndpointStats[];
  /** Endpoints that reconcile (docs/reconcile.md): every event the provider listed until then is in the inbox. */
  reconcile: { endpoint: string; gap_free_until: string | null; last_success_at: string | null }[];
}

function blank(endpoint: string): EndpointStats {
  return {
    endpoint,
    pending: 0,
    parked: 0,
    dead: 0,
    oldest_pending_age_seconds: null,
    processed: 0,
    ignored: 0,
    stale: 0,
    discarded: 0,
    test: 0,
    accepted: 0,
    duplicate: 0,
    duplicate_rate: null,
    latency_p50_seconds: null,
    latency_p99_seconds: null,
    paused: false,
    paused_at: null,
    paused_by: null,
    pause_reason: null,
    paused_seconds: null,
  };
}

const round = (value: number) => Math.round(value * 1000) / 1000;

export async function collectStats(
  pool: pg.Pool,
  since: Date,
  endpoint: string | null,
  configured: readonly string[],
): Promise<StatsReport> {
  const byEndpoint = new Map<string, EndpointStats>();
  const entry = (name: string) => {
    let stats = byEndpoint.get(name);
    if (!stats) {
      stats = blank(name);
      byEndpoint.set(name, stats);
    }
    return stats;
  };
  for (const name of configured) if (endpoint === null || name === endpoint) entry(name);

  const backlog = await pool.query<{
    endpoint: string;
    status: string;
    events: string;
    oldest_age_seconds: number;
  }>(BACKLOG_BY_ENDPOINT);
  for (const row of backlog.rows) {
    if (endpoint !== null && row.endpoint !== endpoint) continue;
    const stats = entry(row.endpoint);
    if (row.status === 'pending' || row.status === 'parked' || row.status === 'dead')
      stats[row.status] = Number(row.events);
    if (row.status === 'pending') stats.oldest_pending_age_seconds = round(row.oldest_age_seconds);
  }
  const settled = await pool.query<{ endpoint: string; status: string; test: boolean; events: string }>(
    SETTLED_IN_WINDOW,
    [since, endpoint, TEST_EVENT_TYPE],
  );
  for (const row of settled.rows) {
    const stats = entry(row.endpoint);
    if (row.test) stats.test += Number(row.events);
    else if (
      row.status === 'processed' ||
      row.status === 'ignored' ||
      row.status === 'stale' ||
      row.status === 'discarded'
    )
      stats[row.status] += Number(row.events);
  }
  const deliveries = await pool.query<{ endpoint: string; accepted: string; duplicate: string }>(
    DELIVERIES_IN_WINDOW,
    [since, endpoint],
  );
  for (const row of deliveries.rows) {
    const stats = entry(row.endpoint);
    stats.accepted = Number(row.accepted);
    stats.duplicate = Number(row.duplicate);
    const total = stats.accepted + stats.duplicate;
    stats.duplicate_rate = total > 0 ? stats.duplicate / total : null;
  }
  const latency = await pool.query<{ endpoint: string; p50: number; p99: number }>(LATENCY_IN_WINDOW, [
    since,
    endpoint,
  ]);
  for (const row of latency.rows) {
    const stats = entry(row.endpoint);
    stats.latency_p50_seconds = round(row.p50);
    stats.latency_p99_seconds = round(row.p99);
  }
  for (const pause of await pausedEndpoints(pool)) {
    if (endpoint !== null && pause.endpoint !== endpoint) continue;
    const stats = entry(pause.endpoint);
    stats.paused = true;
    stats.paused_at = pause.paused_at.toISOString();
    stats.paused_by = pause.paused_by;
    stats.pause_reason = pause.pause_reason;
    stats.paused_seconds = round(pause.paused_seconds);
  }
  const endpoints = [...byEndpoint.values()].sort((a, b) => (a.endpoint < b.endpoint ? -1 : 1));
  const reconcile = (await readStates(pool))
    .filter((state) => endpoint === null || state.endpoint === endpoint)
    .map((state) => ({
      endpoint: state.endpoint,
      gap_free_until: state.watermark?.toISOString() ?? null,
      last_success_at: state.lastSuccessAt?.toISOString() ?? null,
    }));
  return { since: since.toISOString(), endpoints, reconcile };
}

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
function renderDestinationStats(rows: Awaited<ReturnType<typeof destinationStats>>): string {
  return table(
    ['ENDPOINT', 'DESTINATION', 'WAITING', 'HELD', 'DEAD', 'DELIVERED', 'P99', 'BREAKER', 'PAUSED'],
    rows.map((row) => [
      row.endpoint,
      row.destination,
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
      if (destinations.length > 0) writeOut(`\n${renderDestinationStats(destinations)}`);
    }
  });
}
