import type pg from 'pg';
import type { PgBoss } from 'pg-boss';
import { type SweepCursor, sweepOrphans } from '../core/inbox/orphans.ts';
import type { Ended } from '../core/inbox/rows.ts';
import type { Logger } from '../core/logging.ts';
import type { OutageLog } from '../core/outage-log.ts';

/** Arbitrary fixed key ('swep') of the advisory lock that lets one worker at a time sweep. */
const SWEEP_LOCK = 0x73776570;

export interface SweeperOptions {
  readonly pool: pg.Pool;
  readonly boss: PgBoss;
  readonly logger: Logger;
  readonly endpoints: readonly string[];
  /** Between two sweeps, and how old a dispatch must be to be looked at. */
  readonly intervalMs: number;
  readonly maxAttempts: number;
  readonly onEnded?: (endpoint: string, ended: readonly Ended[]) => void;
  /** Counts failures while the database is unreachable, instead of a line each. */
  readonly outage?: OutageLog | undefined;
}

/**
 * Every `intervalMs`, one worker of the deployment (a transaction-scoped advisory lock) looks for
 * pending rows whose job is finished or gone and sends them again (services/core/inbox/orphans.ts):
 * nothing pending can be stranded, whatever happened to its job. A backlog whose jobs are all
 * live is walked a few pages per sweep, from where the last sweep stopped.
 */
export function startSweeper(options: SweeperOptions): { stop(): Promise<void> } {
  const cursors = new Map<string, SweepCursor>();
  let timer: NodeJS.Timeout | undefined;
  let running: Promise<void> = Promise.resolve();
  let stopped = false;

  const sweep = async (): Promise<void> => {
    let client: pg.PoolClient;
    try {
      client = await options.pool.connect();
    } catch (error) {
      if (!options.outage?.failed('worker sweeper', error))
        options.logger.warn(
          { err: error },
          'could not sweep for events without a live job; trying again later',
        );
      return;
    }
    let broken = false;
    try {
      await client.query('BEGIN');
      const lock = await client.query<{ got: boolean }>('SELECT pg_try_advisory_xact_lock($1) AS got', [
        SWEEP_LOCK,
      ]);
      if (!lock.rows[0]?.got) {
        await client.query('COMMIT');
        return;
      }
      for (const endpoint of options.endpoints) {
        const result = await sweepOrphans(
          client,
          options.boss,
          endpoint,
          { maxAttempts: options.maxAttempts, graceSeconds: options.intervalMs / 1000 },
          cursors.get(endpoint) ?? null,
        );
        cursors.set(endpoint, result.cursor);
        if (result.redispatched.length > 0) {
          options.logger.warn(
            { endpoint, events: result.redispatched.length, first: result.redispatched[0] },
            'pending events had no live job; sent them again',
          );
        }
        if (result.ended.length > 0) {
          options.logger.warn(
            { endpoint, events: result.ended.length, first: result.ended[0]!.eventId },
            'pending events had no live job and no attempt left; ended them',
          );
          options.onEnded?.(endpoint, result.ended);
        }
      }
      await client.query('COMMIT');
      options.outage?.recovered();
    } catch (error) {
      broken = true;
      await client.query('ROLLBACK').catch(() => {});
      if (!options.outage?.failed('worker sweeper', error))
        options.logger.warn(
          { err: error },
          'could not sweep for events without a live job; trying again later',
        );
    } finally {
      client.release(broken);
    }
  };

  const schedule = () => {
    if (stopped) return;
    timer = setTimeout(() => {
      running = sweep().finally(schedule);
    }, options.intervalMs);
    timer.unref();
  };
  schedule();
  return {
    async stop() {
      stopped = true;
      clearTimeout(timer);
      await running;
    },
  };
}
