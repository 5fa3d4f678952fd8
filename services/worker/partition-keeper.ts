import type pg from 'pg';
import { ensureInboxPartitions } from '../core/inbox/partitions.ts';
import type { Logger } from '../core/logging.ts';
import type { OutageLog } from '../core/outage-log.ts';

/** Hourly: partitions are made a week ahead, so a few missed hours cost nothing. */
const KEEP_EVERY_MS = 3_600_000;

export interface PartitionKeeperOptions {
  readonly pool: pg.Pool;
  readonly logger: Logger;
  readonly outage?: OutageLog | undefined;
  readonly intervalMs?: number;
}

/**
 * Keeps the inbox's day partitions made ahead (services/core/inbox/partitions.ts) from the
 * workers, at start and every hour, so a deployment whose prune CronJob is off or failing still
 * never runs out of them. Without a partition for the day, claims still succeed (their rows go to
 * the default partition); that day is then retained row by row instead of dropped whole.
 */
export function startPartitionKeeper(options: PartitionKeeperOptions): { stop(): Promise<void> } {
  let running: Promise<void> = Promise.resolve();
  const keep = async (): Promise<void> => {
    try {
      const made = await ensureInboxPartitions(options.pool);
      if (made > 0) options.logger.info({ partitions: made }, 'made inbox partitions ahead');
    } catch (error) {
      if (!options.outage?.failed('worker partition keeper', error))
        options.logger.warn(
          { err: error },
          'could not make the inbox partitions ahead; trying again in an hour',
        );
    }
  };
  running = keep();
  const timer = setInterval(() => {
    running = running.then(keep);
  }, options.intervalMs ?? KEEP_EVERY_MS);
  timer.unref();
  return {
    async stop() {
      clearInterval(timer);
      await running;
    },
  };
}
