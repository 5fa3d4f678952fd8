import type pg from 'pg';
import { endUnconfiguredDeliveries } from '../core/destinations/deliveries.ts';
import type { Routes } from '../core/destinations/routes.ts';
import type { Logger } from '../core/logging.ts';
import type { DestinationMetrics } from './destinations.ts';

// A delivery row names its endpoint and destination, nothing more: the relay looks URL, headers
// and keys up in the loaded configuration. A row naming a destination that configuration does
// not have (removed since, or written by whoever can write the table) is claimed by no loop;
// rather than wait forever, unseen, it ends `dead` with a sentence, counted and alerted on as any
// dead delivery, and redeliverable once the destination is back. Run once when the relay starts:
// a worker still on the previous configuration during a rolling change swept before the new
// destination existed, so it never ends the new one's rows.

export async function endUnconfigured(options: {
  readonly pool: pg.Pool;
  readonly routes: Routes;
  readonly logger: Logger;
  readonly metrics?: DestinationMetrics | null;
  readonly now?: Date;
}): Promise<number> {
  const configured = [...options.routes.values()].flatMap((routes) =>
    routes.map((route) => ({ endpoint: route.endpoint, destination: route.name })),
  );
  const ended = await endUnconfiguredDeliveries(options.pool, configured, options.now ?? new Date());
  const counts = new Map<string, { endpoint: string; destination: string; count: number }>();
  for (const row of ended) {
    const key = JSON.stringify([row.endpoint, row.destination]);
    const entry = counts.get(key) ?? { ...row, count: 0 };
    entry.count += 1;
    counts.set(key, entry);
  }
  for (const { endpoint, destination, count } of counts.values()) {
    options.metrics?.deliveries.inc({ endpoint, destination, outcome: 'dead' }, count);
    options.logger.error(
      { endpoint, destination, deliveries: count, code: 'destination_unconfigured' },
      'destination relay: deliveries to a destination the configuration does not have; ended dead (redeliver them once it is back)',
    );
  }
  return ended.length;
}
