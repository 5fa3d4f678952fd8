import { existsSync } from 'node:fs';
import { join, resolve } from 'node:path';
import pg from 'pg';
import type { PgBoss } from 'pg-boss';
import { createPool } from '../core/db/pool.ts';
import { EMBEDDED_DIR, type ResolvedDatabase, resolveDatabase } from '../core/db/resolve.ts';
import { checkDatabaseServer } from '../core/db/server-checks.ts';
import { HookgateError } from '../core/errors.ts';
import type { Logger } from '../core/logging.ts';
import { migrate, pendingMigrations } from '../core/migrate/migrate.ts';
import { createBoss } from '../core/queue/boss.ts';
import { databaseHost } from './support/exit.ts';
import { writeErr } from './support/terminal-text.ts';

/** Refuses a DATABASE_URL that is not a postgres:// URL before anything tries to connect. */
export function checkDatabaseUrl(env: NodeJS.ProcessEnv = process.env): void {
  const url = env.DATABASE_URL?.trim();
  if (!url) return;
  let parsed: URL | null = null;
  try {
    parsed = new URL(url);
  } catch {
    parsed = null;
  }
  if (!parsed || !/^postgres(ql)?:$/.test(parsed.protocol)) {
    throw new HookgateError(
      'database_url_invalid',
      'DATABASE_URL is not a PostgreSQL URL; expected postgres://user:password@host:5432/database.',
    );
  }
}

/** `host:port/database` of a connection string, never its user or password. */
export function databaseAddress(url: string): string {
  const name = (() => {
    try {
      return decodeURIComponent(new URL(url).pathname.slice(1));
    } catch {
      return '';
    }
  })();
  return `${databaseHost(url)}/${name}`;
}

/** `host:port/database` of DATABASE_URL, or where the embedded data lives. */
export function describeDatabase(database: ResolvedDatabase): string {
  if (database.embedded) return `the embedded PostgreSQL under ${database.embedded.dataDir}`;
  return `PostgreSQL at ${databaseAddress(database.url)}`;
}

/** Resolves DATABASE_URL or starts the embedded PostgreSQL, announcing which. */
export async function openDatabase(logger: Logger): Promise<ResolvedDatabase> {
  checkDatabaseUrl();
  if (!process.env.DATABASE_URL?.trim()) {
    logger.info(
      { dir: `./${EMBEDDED_DIR}/` },
      `DATABASE_URL is not set: starting an embedded PostgreSQL under ./${EMBEDDED_DIR}/ (for trying hookgate out, not for production)`,
    );
  }
  const database = await resolveDatabase();
  if (!database.embedded) {
    // Which database, before anything connects to it: never the user or the password.
    logger.info({ database: databaseAddress(database.url) }, `using ${describeDatabase(database)}`);
  } else if (database.embedded.adoptedPid) {
    logger.info(
      { data_dir: database.embedded.dataDir, pid: database.embedded.adoptedPid },
      'using the embedded PostgreSQL that is already running; it keeps running after this process exits',
    );
  } else if (database.embedded) {
    logger.info({ data_dir: database.embedded.dataDir }, 'embedded PostgreSQL is running');
  }
  return database;
}

/**
 * For commands that read an existing database: DATABASE_URL, or the embedded database that
 * `serve`/`migrate` created in this directory. Never a new empty one somewhere else, which
 * would answer "nothing here" or invite migrating the wrong database.
 */
export async function openExistingDatabase(): Promise<ResolvedDatabase> {
  checkDatabaseUrl();
  if (!process.env.DATABASE_URL?.trim()) {
    const dataDir = resolve(EMBEDDED_DIR, 'pg');
    if (!existsSync(join(dataDir, 'PG_VERSION'))) {
      throw new HookgateError(
        'database_missing',
        `DATABASE_URL is not set and ${process.cwd()} has no embedded database (./${EMBEDDED_DIR}/, created where "hookgate serve" first ran). Set DATABASE_URL, or run this command in that directory.`,
      );
    }
  }
  const database = await resolveDatabase();
  writeErr(`hookgate: using ${describeDatabase(database)}\n`);
  return database;
}

export async function runMigrations(
  url: string,
  logger: Logger,
  options: { createRoles?: boolean } = {},
): Promise<readonly string[]> {
  // The migration lock is a session's: through a pooler lending sessions per transaction it could
  // be released on another backend and stay held. Refused before anything changes.
  const probe = createPool({
    connectionString: url,
    max: 2,
    statementTimeoutMs: 10_000,
    connectTimeoutMs: 10_000,
    applicationName: 'hookgate-migrate',
  });
  try {
    await checkDatabaseServer(probe, databaseHost(url));
  } finally {
    await probe.end();
  }
  const client = new pg.Client({ connectionString: url, application_name: 'hookgate-migrate' });
  await client.connect();
  try {
    const report = await migrate(client, url, options);
    logger.info(
      { applied: report.applied, roles: report.roles },
      report.applied.length ? 'migrations applied' : 'schema is up to date',
    );
    return report.applied;
  } finally {
    await client.end();
  }
}

async function refuseUnmigrated(pool: pg.Pool, database: ResolvedDatabase): Promise<void> {
  const pending = await pendingMigrations(pool);
  if (pending) {
    throw new HookgateError(
      'database_not_migrated',
      `${describeDatabase(database)} is not ready for this version of hookgate (${pending}). If this is the right database, run "hookgate migrate" against it.`,
    );
  }
}

export interface CommandDatabase {
  readonly pool: pg.Pool;
  readonly url: string;
}

/**
 * For one-shot commands: open the existing database, check it is migrated, hand `work` a small
 * pool, and close everything afterwards, also on failure.
 */
export async function withCommandPool<T>(
  command: string,
  statementTimeoutMs: number,
  work: (pool: pg.Pool, database: CommandDatabase) => Promise<T>,
  options: { connections?: number } = {},
): Promise<T> {
  const database = await openExistingDatabase();
  const pool = createPool({
    connectionString: database.url,
    max: options.connections ?? 1,
    statementTimeoutMs,
    connectTimeoutMs: 5_000,
    applicationName: `hookgate-${command}`,
  });
  try {
    await refuseUnmigrated(pool, database);
    return await work(pool, { pool, url: database.url });
  } finally {
    await pool.end();
    await database.embedded?.stop();
  }
}

/** As withCommandPool, with a pg-boss client for commands that send jobs (requeue, replay). */
export async function withCommandQueue<T>(
  command: string,
  statementTimeoutMs: number,
  logger: Logger,
  work: (pool: pg.Pool, boss: PgBoss) => Promise<T>,
): Promise<T> {
  return await withCommandPool(
    command,
    statementTimeoutMs,
    async (pool, database) => {
      const boss = createBoss({
        connectionString: database.url,
        max: 2,
        supervise: false,
        applicationName: `hookgate-${command}`,
      });
      boss.on('error', (error) => logger.error({ err: error }, 'queue error'));
      await boss.start();
      try {
        return await work(pool, boss);
      } finally {
        await boss.stop({ graceful: false, close: true });
      }
    },
    { connections: 3 },
  );
}
