import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type pg from 'pg';
import { PgBoss } from 'pg-boss';
import { HookgateError } from '../errors.ts';
import { PGBOSS_SCHEMA } from '../queue/names.ts';

export const MIGRATIONS_DIR = join(dirname(fileURLToPath(import.meta.url)), '../../../migrations');

/** One advisory lock key for every migrator of every hookgate version (arbitrary, fixed). */
const MIGRATION_LOCK_KEY = 7_301_244_019;

const LOCK = 'SELECT pg_advisory_lock($1)';
const UNLOCK = 'SELECT pg_advisory_unlock($1)';
const CREATE_LEDGER = `
  CREATE SCHEMA IF NOT EXISTS hookgate;
  CREATE TABLE IF NOT EXISTS hookgate.schema_migrations (
    version    integer     PRIMARY KEY,
    name       text        NOT NULL,
    applied_at timestamptz NOT NULL DEFAULT now()
  )`;
const APPLIED_VERSIONS = 'SELECT version FROM hookgate.schema_migrations ORDER BY version';
const LEDGER_EXISTS = `SELECT to_regclass('hookgate.schema_migrations') IS NOT NULL AS exists`;
const RECORD_VERSION = 'INSERT INTO hookgate.schema_migrations (version, name) VALUES ($1, $2)';

export interface Migration {
  readonly version: number;
  readonly name: string;
  readonly sql: string;
}

export function readMigrations(dir: string = MIGRATIONS_DIR): Migration[] {
  return readdirSync(dir)
    .filter((file) => /^\d{4}_[a-z0-9_]+\.sql$/.test(file))
    .sort()
    .map((file) => ({
      version: Number(file.slice(0, 4)),
      name: file.slice(5, -4),
      sql: readFileSync(join(dir, file), 'utf8'),
    }));
}

/** A migration as operators see it everywhere (`0001_inbox`): its file name without `.sql`. */
export function migrationName(migration: Pick<Migration, 'version' | 'name'>): string {
  return `${String(migration.version).padStart(4, '0')}_${migration.name}`;
}

export interface MigrationReport {
  readonly applied: readonly string[];
}

/**
 * Applies pending migrations and installs or upgrades pg-boss's schema. Concurrent migrators
 * serialise on one advisory lock: the second waits, then finds nothing left to do.
 */
export async function migrate(client: pg.Client, connectionString: string): Promise<MigrationReport> {
  await client.query(LOCK, [MIGRATION_LOCK_KEY]);
  try {
    await client.query(CREATE_LEDGER);
    const done = new Set(
      (await client.query<{ version: number }>(APPLIED_VERSIONS)).rows.map((r) => r.version),
    );
    const applied: string[] = [];
    for (const migration of readMigrations()) {
      if (done.has(migration.version)) continue;
      await client.query('BEGIN');
      try {
        await client.query(migration.sql);
        await client.query(RECORD_VERSION, [migration.version, migration.name]);
        await client.query('COMMIT');
      } catch (error) {
        await client.query('ROLLBACK');
        throw new HookgateError(
          'migration_failed',
          `Migration ${migrationName(migration)} failed: ${(error as Error).message}`,
          { cause: error },
        );
      }
      applied.push(migrationName(migration));
    }
    await installPgBoss(connectionString);
    return { applied };
  } finally {
    await client.query(UNLOCK, [MIGRATION_LOCK_KEY]);
  }
}

async function installPgBoss(connectionString: string): Promise<void> {
  const boss = new PgBoss({
    connectionString,
    schema: PGBOSS_SCHEMA,
    max: 1,
    migrate: true,
    supervise: false,
    schedule: false,
  });
  boss.on('error', () => {});
  await boss.start();
  await boss.stop({ graceful: false, close: true });
}

/** Why this database cannot be served yet, or null when every migration is applied. */
export async function pendingMigrations(db: pg.Pool | pg.Client): Promise<string | null> {
  const ledger = await db.query<{ exists: boolean }>(LEDGER_EXISTS);
  if (!ledger.rows[0]?.exists) return 'no hookgate migration has been applied';
  const done = new Set((await db.query<{ version: number }>(APPLIED_VERSIONS)).rows.map((r) => r.version));
  const missing = readMigrations().filter((m) => !done.has(m.version));
  if (missing.length > 0)
    return `${missing.length} migration(s) are not applied (first: ${migrationName(missing[0]!)})`;
  return null;
}
