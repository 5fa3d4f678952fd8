import { Gauge, type Registry } from 'prom-client';
import type { Queryable } from '../db/pool.ts';
import { scrapeReading } from '../scrape-reading.ts';
import { type HeldCount, heldCounts, QUARANTINE_REASONS } from './store.ts';

export interface QuarantineMetricsOptions {
  readonly db: Queryable;
  /** Configured endpoints: each reports 0 per reason when nothing is held, so alerts resolve. */
  readonly endpoints: readonly string[];
  /** quarantine.maxHeldPerEndpoint, reported as hookgate_quarantine_held_limit. */
  readonly maxHeldPerEndpoint: number;
  /** How long one reading serves scrapes (default 5 s). */
  readonly cacheMs?: number;
  readonly onError?: (error: Error) => void;
}

/**
 * `hookgate_quarantine_held{endpoint,reason}`: rows held now (neither released nor dropped), read
 * at scrape time from the held rows' partial index and cached briefly, as the backlog gauges are;
 * `hookgate_quarantine_held_limit{endpoint}`: the cap. Database-wide: take max() across pods.
 */
export function registerQuarantineMetrics(registry: Registry, options: QuarantineMetricsOptions): void {
  const read = scrapeReading(() => heldCounts(options.db), {
    cacheMs: options.cacheMs ?? 5_000,
    empty: [] as HeldCount[],
    onError: options.onError,
  });
  new Gauge({
    name: 'hookgate_quarantine_held',
    help: 'Verified deliveries held in quarantine now (neither released nor dropped), per endpoint and reason. Database-wide: take max() across pods.',
    labelNames: ['endpoint', 'reason'],
    registers: [registry],
    async collect() {
      const rows = await read();
      this.reset();
      for (const endpoint of options.endpoints)
        for (const reason of QUARANTINE_REASONS) this.set({ endpoint, reason }, 0);
      for (const row of rows) this.set({ endpoint: row.endpoint, reason: row.reason }, row.rows);
    },
  });
  new Gauge({
    name: 'hookgate_quarantine_held_limit',
    help: 'quarantine.maxHeldPerEndpoint: held rows at which the endpoint answers 503 quarantine_full.',
    labelNames: ['endpoint'],
    registers: [registry],
    collect() {
      this.reset();
      for (const endpoint of options.endpoints) this.set({ endpoint }, options.maxHeldPerEndpoint);
    },
  });
}
