import { Gauge, type Registry } from 'prom-client';
import type { Queryable } from '../db/pool.ts';
import { scrapeReading } from '../scrape-reading.ts';
import { defaultPartitionRows, partitionCoverage } from './partitions.ts';

export interface PartitionMetricsOptions {
  readonly db: Queryable;
  /** How long one reading serves scrapes (default 60 s: partitions change daily). */
  readonly cacheMs?: number;
  readonly onError?: (error: Error) => void;
}

/**
 * `hookgate_inbox_partitions_ahead_seconds`: how long until the inbox's last day partition ends.
 * Workers and prune keep it at about a week; below a day, whatever makes them ahead has stopped
 * (HookgateInboxPartitionsRunningOut), and at zero new rows land in the default partition, which
 * retention prunes row by row. `hookgate_inbox_default_partition_rows`: rows there now (the
 * unsettled rows of dropped days, normally few). Database-wide: take max() across pods.
 */
interface Reading {
  readonly coverage: Awaited<ReturnType<typeof partitionCoverage>>;
  readonly defaultRows: number;
}

export function registerPartitionMetrics(registry: Registry, options: PartitionMetricsOptions): void {
  const read = scrapeReading<Reading | null>(
    async () => ({
      coverage: await partitionCoverage(options.db),
      defaultRows: await defaultPartitionRows(options.db),
    }),
    {
      cacheMs: options.cacheMs ?? 60_000,
      empty: null,
      onError: options.onError,
    },
  );
  new Gauge({
    name: 'hookgate_inbox_partitions_ahead_seconds',
    help: 'Seconds until the last day partition of the inbox ends (about a week when partitions are kept ahead). Database-wide: take max() across pods.',
    registers: [registry],
    async collect() {
      const reading = await read();
      if (reading) this.set(reading.coverage.ahead_seconds);
    },
  });
  new Gauge({
    name: 'hookgate_inbox_default_partition_rows',
    help: "Rows in the inbox's default partition: unsettled rows kept from dropped days, and rows of days that had no partition. Database-wide: take max() across pods.",
    registers: [registry],
    async collect() {
      const reading = await read();
      if (reading) this.set(reading.defaultRows);
    },
  });
}
