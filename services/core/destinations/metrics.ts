import type pg from 'pg';
import { Gauge, type Registry } from 'prom-client';
import { type StuckCount, stuckCounts } from './deliveries.ts';
import type { Routes } from './routes.ts';

const STUCK_STATUSES = ['held', 'dead'] as const;

/**
 * hookgate_destination_stuck_deliveries{endpoint,destination,status}: held and dead deliveries
 * per configured destination (0 when none, so an alert on it ends when they are gone), read from
 * the database at most once per `cacheMs`. Database-wide: every replica reports the same
 * numbers; aggregate with `max`, never `sum`.
 */
export function registerDestinationGauges(
  registry: Registry,
  options: {
    readonly db: Pick<pg.Pool, 'query'>;
    readonly routes: Routes;
    readonly cacheMs?: number;
    readonly onError?: (error: Error) => void;
  },
): Gauge<'endpoint' | 'destination' | 'status'> {
  const cacheMs = options.cacheMs ?? 5_000;
  let reading: { at: number; rows: StuckCount[] } | null = null;
  return new Gauge({
    name: 'hookgate_destination_stuck_deliveries',
    help: 'Held (destination paused) and dead deliveries per destination. Database-wide: take max() across pods.',
    labelNames: ['endpoint', 'destination', 'status'],
    registers: [registry],
    async collect() {
      if (!reading || Date.now() - reading.at >= cacheMs) {
        try {
          reading = { at: Date.now(), rows: await stuckCounts(options.db) };
        } catch (error) {
          // Serve the last reading rather than fail the whole scrape.
          options.onError?.(error as Error);
        }
      }
      this.reset();
      for (const routes of options.routes.values()) {
        for (const route of routes) {
          for (const status of STUCK_STATUSES)
            this.set({ endpoint: route.endpoint, destination: route.name, status }, 0);
        }
      }
      for (const row of reading?.rows ?? []) {
        this.set({ endpoint: row.endpoint, destination: row.destination, status: row.status }, row.count);
      }
    },
  });
}
