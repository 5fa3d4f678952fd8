import type pg from 'pg';
import type { Logger } from '../logging.ts';
import type { OutageLog } from '../outage-log.ts';
import { pendingMigrations } from './migrate.ts';

/**
 * Readiness as every role means it (the gateway's /readyz, the worker's and the console role's
 * on the metrics listener): the database answers and its migrations are this version's —
 * checked until they are, then a `SELECT 1` — and the process is not shutting down. Null when
 * ready, else a public reason (the error itself goes to the log).
 */
export function readinessCheck(
  pool: pg.Pool,
  options: { readonly logger: Logger; readonly outage?: OutageLog; readonly stopping?: () => boolean },
): () => Promise<string | null> {
  let migrated = false;
  return async () => {
    if (options.stopping?.()) return 'shutting down';
    try {
      if (!migrated) {
        const pending = await pendingMigrations(pool);
        if (pending) return pending;
        migrated = true;
      } else {
        await pool.query('SELECT 1');
      }
      options.outage?.recovered();
      return null;
    } catch (error) {
      if (!options.outage?.failed('readiness', error))
        options.logger.warn({ err: error }, 'readiness check failed');
      return 'database unreachable';
    }
  };
}
