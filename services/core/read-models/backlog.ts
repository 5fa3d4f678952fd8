import { Gauge, type Registry } from 'prom-client';
import type { Queryable } from '../db/pool.ts';
import { STUCK_STATUSES } from '../inbox/status.ts';
import { scrapeReading } from '../scrape-reading.ts';

/** The unsettled statuses the backlog gauges report. */
export const BACKLOG_STATUSES = ['pending', ...STUCK_STATUSES] as const;

/**
 * Two arms, each matching one partial index's predicate exactly (inbox_pending_idx,
 * inbox_stuck_idx), so the cost is the size of the backlog, never of the history.
 */
export const BACKLOG_BY_ENDPOINT = `
  SELECT endpoint, 'pending'::text AS status, count(*)::bigint AS events,
         COALESCE(EXTRACT(EPOCH FROM clock_timestamp() - min(received_at)), 0)::float8 AS oldest_age_seconds
    FROM hookgate.inbox
   WHERE status = 'pending'
   GROUP BY endpoint
  UNION ALL
  SELECT endpoint, status, count(*)::bigint AS events,
         COALESCE(EXTRACT(EPOCH FROM clock_timestamp() - min(received_at)), 0)::float8 AS oldest_age_seconds
    FROM hookgate.inbox
   WHERE status IN ('parked', 'dead')
   GROUP BY endpoint, status`;

export interface BacklogRow {
  readonly endpoint: string;
  readonly status: string;
  readonly events: number;
  readonly oldestAgeSeconds: number;
}

/** The backlog now, per endpoint and unsettled status (stats, the gauges, the API's endpoints). */
export async function readBacklog(db: Queryable): Promise<BacklogRow[]> {
  return (
    await db.query<{ endpoint: string; status: string; events: string; oldest_age_seconds: number }>(
      BACKLOG_BY_ENDPOINT,
    )
  ).rows.map((row) => ({
    endpoint: row.endpoint,
    status: row.status,
    events: Number(row.events),
    oldestAgeSeconds: row.oldest_age_seconds,
  }));
}

export interface BacklogMetricsOptions {
  readonly db: Queryable;
  /** Configured endpoints: each reports 0 when it has no backlog, so alerts resolve. */
  readonly endpoints: readonly string[];
  /** How long one reading serves scrapes (default 5 s). */
  readonly cacheMs?: number;
  readonly now?: () => number;
  /** Called when the query fails; the previous reading (if any) is served meanwhile. */
  readonly onError?: (error: Error) => void;
}

/**
 * `hookgate_backlog_events{endpoint,status}` and `hookgate_backlog_oldest_age_seconds{endpoint}`,
 * computed at scrape time from the partial indexes and cached briefly, so many replicas (and
 * several Prometheus servers) scraping do not load the database: at most one query per process
 * per `cacheMs`. Concurrent scrapes share one in-flight query. Every replica reports the same
 * database-wide numbers: aggregate with `max`, never `sum`.
 */
export function registerBacklogMetrics(registry: Registry, options: BacklogMetricsOptions) {
  // Serves the last reading rather than fail the whole scrape when the query fails.
  const read = scrapeReading((): Promise<BacklogRow[]> => readBacklog(options.db), {
    cacheMs: options.cacheMs ?? 5_000,
    empty: [],
    now: options.now ?? Date.now,
    onError: options.onError,
  });

  // The events gauge's collect reads; the age gauge is collected right after in the same scrape
  // and uses the same (cached) reading.
  const events = new Gauge({
    name: 'hookgate_backlog_events',
    help: 'Unsettled inbox events by endpoint and status (pending, parked, dead). Database-wide: take max() across pods.',
    labelNames: ['endpoint', 'status'],
    registers: [registry],
    async collect() {
      const rows = await read();
      this.reset();
      for (const endpoint of options.endpoints) {
        for (const status of BACKLOG_STATUSES) this.set({ endpoint, status }, 0);
      }
      for (const row of rows) this.set({ endpoint: row.endpoint, status: row.status }, row.events);
    },
  });
  const oldest = new Gauge({
    name: 'hookgate_backlog_oldest_age_seconds',
    help: 'Age of the oldest pending inbox event per endpoint (0 when none). Database-wide: take max() across pods.',
    labelNames: ['endpoint'],
    registers: [registry],
    async collect() {
      const rows = await read();
      this.reset();
      for (const endpoint of options.endpoints) this.set({ endpoint }, 0);
      for (const row of rows) {
        if (row.status === 'pending') this.set({ endpoint: row.endpoint }, row.oldestAgeSeconds);
      }
    },
  });
  return { events, oldest, read };
}
