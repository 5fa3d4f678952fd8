import pg from 'pg';
import { migrate, pendingMigrations } from '../core/db/migrate.ts';
import { createPool } from '../core/db/pool.ts';
import { EMBEDDED_DIR, type ResolvedDatabase, resolveDatabase } from '../core/db/resolve.ts';
import { HookgateError } from '../core/errors.ts';
import { createLogger, type Logger } from '../core/logging.ts';

/** Resolves DATABASE_URL or starts the embedded PostgreSQL, announcing which. */
export async function openDatabase(logger: Logger): Promise<ResolvedDatabase> {
  if (!process.env.DATABASE_URL?.trim()) {
    logger.info(
      { dir: `./${EMBEDDED_DIR}/` },
      `DATABASE_URL is not set: starting an embedded PostgreSQL under ./${EMBEDDED_DIR}/ (for trying hookgate out, not for production)`,
    );
  }
  const database = await resolveDatabase();
  if (database.embedded?.adoptedPid) {
    logger.info(
      { dataDir: database.embedded.dataDir, pid: database.embedded.adoptedPid },
      'using the embedded PostgreSQL that is already running; it keeps running after this process exits',
    );
  } else if (database.embedded) {
    logger.info({ dataDir: database.embedded.dataDir }, 'embedded PostgreSQL is running');
  }
  return database;
}

export async function runMigrations(url: string, logger: Logger): Promise<readonly string[]> {
  const client = new pg.Client({ connectionString: url, application_name: 'hookgate-migrate' });
  await client.connect();
  try {
    const report = await migrate(client, url);
    logger.info(
      { applied: report.applied },
      report.applied.length ? 'migrations applied' : 'schema is up to date',
    );
    return report.applied;
  } finally {
    await client.end();
  }
}

/**
 * For one-shot commands: open the database (DATABASE_URL or the embedded one), hand `work` a
 * one-connection pool, and close everything afterwards, also on failure.
 */
export async function withCommandPool<T>(
  command: string,
  statementTimeoutMs: number,
  work: (pool: pg.Pool) => Promise<T>,
): Promise<T> {
  const database = await openDatabase(createLogger('warn'));
  const pool = createPool({
    connectionString: database.url,
    max: 1,
    statementTimeoutMs,
    connectTimeoutMs: 5_000,
    applicationName: `hookgate-${command}`,
  });
  try {
    const pending = await pendingMigrations(pool);
    if (pending) {
      throw new HookgateError(
        'database_not_migrated',
        `The database is not ready for this version of hookgate (${pending}). Run "hookgate migrate" first.`,
      );
    }
    return await work(pool);
  } finally {
    await pool.end();
    await database.embedded?.stop();
  }
}
