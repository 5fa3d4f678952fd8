import { Counter, Gauge, type Registry } from 'prom-client';
import type { Queryable } from '../db/pool.ts';
import { scrapeReading } from '../scrape-reading.ts';
import { type ReconcileState, readStates } from './state-sql.ts';

export interface ReconcileMetricsOptions {
  readonly db: Queryable;
  /** Reconciling endpoints and their staleAfter (ms): each reports, so alerts see them before a run. */
  readonly endpoints: readonly { readonly name: string; readonly staleAfter: number }[];
  /** How long one reading serves scrapes (default 5 s). */
  readonly cacheMs?: number;
  readonly now?: () => number;
  readonly onError?: (error: Error) => void;
}

const seconds = (date: Date | null) => (date ? date.getTime() / 1000 : 0);

/**
 * The reconciliation metrics, read at scrape time from hookgate.reconcile_state (one small query,
 * cached briefly and shared by the gauges of one scrape). Database-wide like the backlog gauges:
 * every pod reports the same values, so aggregate with max(), never sum().
 * - hookgate_reconcile_missing_total{endpoint}: events runs found missing and filled, in total.
 * - hookgate_reconcile_last_success_timestamp_seconds{endpoint}: the last complete run (0: none yet).
 * - hookgate_reconcile_gap_free_until_timestamp_seconds{endpoint}: the watermark (0: none yet).
 * - hookgate_reconcile_stale_after_seconds{endpoint}: the configured reconcile.staleAfter.
 */
export function registerReconcileMetrics(registry: Registry, options: ReconcileMetricsOptions): void {
  if (options.endpoints.length === 0) return;
  const read = scrapeReading(
    async () => new Map((await readStates(options.db)).map((row) => [row.endpoint, row])),
    {
      cacheMs: options.cacheMs ?? 5_000,
      empty: new Map<string, ReconcileState>(),
      now: options.now ?? Date.now,
      onError: options.onError,
    },
  );
  const names = options.endpoints.map((endpoint) => endpoint.name);

  new Counter({
    name: 'hookgate_reconcile_missing_total',
    help: 'Events reconciliation found missing from the inbox and filled, in total. Database-wide: take max() across pods.',
    labelNames: ['endpoint'],
    registers: [registry],
    async collect() {
      const states = await read();
      // A running total kept in the database: set as the counter's value at each scrape.
      this.reset();
      for (const name of names) this.inc({ endpoint: name }, states.get(name)?.missingTotal ?? 0);
    },
  });
  new Gauge({
    name: 'hookgate_reconcile_last_success_timestamp_seconds',
    help: 'When the last complete reconciliation run of the endpoint finished (0: none yet). Database-wide: take max() across pods.',
    labelNames: ['endpoint'],
    registers: [registry],
    async collect() {
      const states = await read();
      for (const name of names)
        this.set({ endpoint: name }, seconds(states.get(name)?.lastSuccessAt ?? null));
    },
  });
  new Gauge({
    name: 'hookgate_reconcile_gap_free_until_timestamp_seconds',
    help: 'The reconciliation watermark: every event the provider listed up to this time is in the inbox (0: none yet). Database-wide: take max() across pods.',
    labelNames: ['endpoint'],
    registers: [registry],
    async collect() {
      const states = await read();
      for (const name of names) this.set({ endpoint: name }, seconds(states.get(name)?.watermark ?? null));
    },
  });
  new Gauge({
    name: 'hookgate_reconcile_stale_after_seconds',
    help: 'The endpoint’s reconcile.staleAfter: HookgateReconcileNotSucceeding fires past it without a complete run.',
    labelNames: ['endpoint'],
    registers: [registry],
    collect() {
      for (const endpoint of options.endpoints)
        this.set({ endpoint: endpoint.name }, endpoint.staleAfter / 1000);
    },
  });
}
