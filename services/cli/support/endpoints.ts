import type pg from 'pg';
import type { Config } from '../../core/config/schema.ts';
import { HookgateError } from '../../core/errors.ts';
import { ENDPOINT_SEEN } from '../../core/read-models/stats-sql.ts';
import { requireEndpoint } from './options.ts';

/**
 * An `--endpoint` filter must name a real endpoint: the configuration's when there is one, else
 * one the database has seen. A typo must not look like "nothing here".
 */
export async function checkEndpointFilter(
  pool: pg.Pool,
  config: Config | null,
  endpoint: string | undefined,
): Promise<void> {
  if (endpoint === undefined) return;
  if (config) {
    requireEndpoint(config, endpoint);
    return;
  }
  const result = await pool.query<{ seen: boolean }>(ENDPOINT_SEEN, [endpoint]);
  if (!result.rows[0]?.seen) {
    throw new HookgateError(
      'endpoint_unknown',
      `No endpoint named "${endpoint}" has any event in this database (and no configuration was given to check it against).`,
    );
  }
}
