import type pg from 'pg';
import { TEST_EVENT_TYPE } from '../handlers/test-event.ts';
import { pausedEndpoints } from '../pause/pause.ts';
import { readStates } from '../reconcile/state-sql.ts';
import { BACKLOG_BY_ENDPOINT } from './backlog.ts';
import { DELIVERIES_IN_WINDOW, LATENCY_IN_WINDOW, SETTLED_IN_WINDOW } from './stats-sql.ts';

// `hookgate stats` and the API's /stats: per endpoint, the backlog now (the inbox's partial
// indexes), what settled of the events received in the window, the deliveries and the duplicate
// rate (hookgate.delivery_counts), the latency percentiles, the pause, and where reconciliation
// stands. One function, so the command and the API report the same columns.

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
