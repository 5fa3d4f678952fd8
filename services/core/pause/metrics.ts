import { Gauge, type Registry } from 'prom-client';
import type { Queryable } from '../db/pool.ts';
import { scrapeReading } from '../scrape-reading.ts';
import { type PauseState, pausedEndpoints } from './pause.ts';

export interface PauseMetricsOptions {
  readonly db: Queryable;
  /** Configured endpoints: each reports 0 when not paused, so alerts resolve. */
  readonly endpoints: readonly string[];
  /** How long one reading serves scrapes (default 5 s). */
  readonly cacheMs?: number;
  readonly onError?: (error: Error) => void;
}

/**
 * `hookgate_endpoint_paused{endpoint}` (1 while paused) and `hookgate_endpoint_paused_seconds
 * {endpoint}` (how long, 0 when not), read at scrape time from hookgate.endpoint_state and cached
 * briefly, as the backlog gauges are. Database-wide: take max() across pods.
 */
export function registerPauseMetrics(registry: Registry, options: PauseMetricsOptions) {
  const read = scrapeReading(() => pausedEndpoints(options.db), {
    cacheMs: options.cacheMs ?? 5_000,
    empty: [] as PauseState[],
    onError: options.onError,
  });
  const paused = new Gauge({
    name: 'hookgate_endpoint_paused',
    help: 'Whether an operator paused the endpoint (hookgate pause): 1 while its events are held. Database-wide: take max() across pods.',
    labelNames: ['endpoint'],
    registers: [registry],
    async collect() {
      const rows = await read();
      this.reset();
      for (const endpoint of options.endpoints) this.set({ endpoint }, 0);
      for (const row of rows) this.set({ endpoint: row.endpoint }, 1);
    },
  });
  const seconds = new Gauge({
    name: 'hookgate_endpoint_paused_seconds',
    help: 'How long the endpoint has been paused (0 when it is not). Database-wide: take max() across pods.',
    labelNames: ['endpoint'],
    registers: [registry],
    async collect() {
      const rows = await read();
      this.reset();
      for (const endpoint of options.endpoints) this.set({ endpoint }, 0);
      for (const row of rows) this.set({ endpoint: row.endpoint }, row.paused_seconds);
    },
  });
  return { paused, seconds };
}
