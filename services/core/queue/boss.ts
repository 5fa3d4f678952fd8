import type pg from 'pg';
import { type ConstructorOptions, PgBoss } from 'pg-boss';
import { KEEPALIVE_IDLE_MS } from '../db/pool.ts';
import { PGBOSS_SCHEMA } from './names.ts';

export interface BossOptions {
  readonly connectionString: string;
  /** Connections pg-boss may hold for its own polling and maintenance. */
  readonly max: number;
  /** Only instances that consume jobs supervise (expire stalled jobs, run maintenance). */
  readonly supervise: boolean;
  readonly applicationName: string;
  /** Seconds between supervision passes (expiry, dead-lettering of expired jobs); default 60. */
  readonly superviseIntervalSeconds?: number;
  /**
   * Seconds between retention passes (deleting finished jobs past their queue's deleteAfterSeconds);
   * pg-boss's own default is 24 hours, which would keep completed jobs for up to a day longer.
   */
  readonly maintenanceIntervalSeconds?: number;
}

/**
 * pg-boss over hookgate's database. It never migrates on its own: `hookgate migrate` owns the
 * schema, so start() fails with a clear error on an unmigrated database.
 */
export function createBoss(options: BossOptions): PgBoss {
  // pg-boss hands its options to its pg.Pool as they are, so the pool's TCP keepalives can be
  // set here although pg-boss's types do not list them: its connections notice a vanished
  // database as soon as hookgate's own do (pool.ts, KEEPALIVE_IDLE_MS).
  const settings: ConstructorOptions & Pick<pg.PoolConfig, 'keepAlive' | 'keepAliveInitialDelayMillis'> = {
    connectionString: options.connectionString,
    keepAlive: true,
    keepAliveInitialDelayMillis: KEEPALIVE_IDLE_MS,
    schema: PGBOSS_SCHEMA,
    max: options.max,
    application_name: options.applicationName,
    migrate: false,
    supervise: options.supervise,
    schedule: false,
    ...(options.superviseIntervalSeconds
      ? {
          superviseIntervalSeconds: options.superviseIntervalSeconds,
          monitorIntervalSeconds: options.superviseIntervalSeconds,
        }
      : {}),
    ...(options.maintenanceIntervalSeconds
      ? { maintenanceIntervalSeconds: options.maintenanceIntervalSeconds }
      : {}),
  };
  return new PgBoss(settings);
}
