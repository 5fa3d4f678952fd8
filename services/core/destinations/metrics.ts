import type pg from 'pg';
import { Gauge, type Registry } from 'prom-client';
import { type StuckCount, stuckCounts } from '../read-models/destinations-sql.ts';
import { openBreakers } from './breaker.ts';
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
): void {
  const cacheMs = options.cacheMs ?? 5_000;
  let reading: { at: number; rows: StuckCount[] } | null = null;
  let breakers: { at: number; rows: Awaited<ReturnType<typeof openBreakers>> } | null = null;
  new Gauge({
    name: 'hookgate_destination_breaker_state',
    help: 'Each destination breaker: 1 for its state now (closed, open, half_open), 0 for the others. Database-wide: take max() across pods.',
    labelNames: ['endpoint', 'destination', 'state'],
    registers: [registry],
    async collect() {
      if (!breakers || Date.now() - breakers.at >= cacheMs) {
        try {
          breakers = { at: Date.now(), rows: await openBreakers(options.db) };
        } catch (error) {
          options.onError?.(error as Error);
        }
      }
      this.reset();
      const notClosed = new Map(
        (breakers?.rows ?? []).map((row) => [`${row.endpoint}/${row.destination}`, row.state]),
      );
      for (const routes of options.routes.values()) {
        for (const route of routes) {
          if (!route.settings.breaker) continue;
          const now = notClosed.get(`${route.endpoint}/${route.name}`) ?? 'closed';
          for (const state of ['closed', 'open', 'half_open'])
            this.set({ endpoint: route.endpoint, destination: route.name, state }, state === now ? 1 : 0);
        }
      }
    },
  });
  new Gauge({
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
