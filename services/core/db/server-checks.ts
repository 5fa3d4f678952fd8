import type pg from 'pg';
import { HookgateError } from '../errors.ts';
import { refuseSharedSessions } from './pooling-mode.ts';

/**
 * The oldest PostgreSQL major hookgate runs on: the oldest `make test` proves (every integration
 * file and the load run on 15 and on 18), and the first whose `public` schema no longer lets
 * every role create tables, which the runtime role's "rows only" relies on (roles.ts).
 */
export const MINIMUM_MAJOR = 15;

const SERVER_VERSION = 'SHOW server_version_num';

/** Why a server of this `server_version_num` is refused, or null. */
export function versionProblem(versionNum: number, where: string): string | null {
  if (versionNum >= MINIMUM_MAJOR * 10_000) return null;
  const major = Math.floor(versionNum / 10_000);
  const minor = versionNum % 10_000;
  return `${where} runs PostgreSQL ${major}.${minor}; hookgate needs PostgreSQL ${MINIMUM_MAJOR} or later.`;
}

/** What `serve` and `migrate` check before anything else: the major, then the pooling mode. */
export async function checkDatabaseServer(pool: pg.Pool, where: string): Promise<void> {
  const rows = (await pool.query<{ server_version_num: string }>(SERVER_VERSION)).rows;
  const problem = versionProblem(Number(rows[0]?.server_version_num), where);
  if (problem) throw new HookgateError('database_version_unsupported', problem);
  await refuseSharedSessions(pool, where);
}
