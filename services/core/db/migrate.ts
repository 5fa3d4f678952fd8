import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { PgBoss } from 'pg-boss';
import { HookgateError } from '../errors.ts';
import { convertInboxOnline, ensureInboxPartitions, inboxIsPartitioned } from '../inbox/partitions.ts';
import { PGBOSS_SCHEMA } from '../queue/names.ts';
import { applyRoles } from './roles.ts';

export const MIGRATIONS_DIR = join(dirname(fileURLToPath(import.meta.url)), '../../../migrations');

/** The migration that prepares the partitioned inbox (0021_inbox_partitions). */
const PARTITIONED_INBOX_VERSION = 21;
/** How migrate names the inbox's online conversion among what it applied (or would). */
const INBOX_CONVERSION = 'inbox partitioned (online conversion)';

/** One advisory lock key for every migrator of every hookgate version (arbitrary, fixed). */
const MIGRATION_LOCK_KEY = 7_301_244_019;

// Tried, not waited for: a session blocked in pg_advisory_lock holds a snapshot for as long as
// it waits, and CREATE INDEX CONCURRENTLY (below) waits for every older snapshot to end, so a
// second migrator waiting on the lock would stall the first one's index build.
const TRY_LOCK = 'SELECT pg_try_advisory_lock($1) AS locked';
const LOCK_RETRY_MS = 250;
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

/**
 * A migration whose first line is this runs outside a transaction, statement by statement: for
 * CREATE INDEX CONCURRENTLY, which builds an index on a table in use without blocking its writes
 * (a plain CREATE INDEX on a large inbox would hold every claim for the whole build). Its
 * statements must be safe to run again (IF NOT EXISTS): a run that stops halfway is repeated.
 */
const NO_TRANSACTION = /^-- hookgate: no transaction\b/;
const CONCURRENT_INDEX =
  /^CREATE\s+(?:UNIQUE\s+)?INDEX\s+CONCURRENTLY\s+IF\s+NOT\s+EXISTS\s+(\w+)\s+ON\s+(?:ONLY\s+)?(\w+)\./i;
/** An index a stopped CREATE INDEX CONCURRENTLY left behind: present, never valid, still paid for by every write. */
const INVALID_INDEX = `
  SELECT 1 FROM pg_index i
    JOIN pg_class c ON c.oid = i.indexrelid
    JOIN pg_namespace n ON n.oid = c.relnamespace
   WHERE n.nspname = $1 AND c.relname = $2 AND NOT i.indisvalid`;

/** The statements of a no-transaction migration: comment lines dropped, split at `;` ending a line. */
export function statementsOf(sql: string): string[] {
  return sql
    .split('\n')
    .filter((line) => !line.trim().startsWith('--'))
    .join('\n')
    .split(/;\s*(?:\n|$)/)
    .map((statement) => statement.trim())
    .filter((statement) => statement.length > 0);
}

async function applyOutsideTransaction(client: pg.Client, migration: Migration): Promise<void> {
  for (const statement of statementsOf(migration.sql)) {
    const index = CONCURRENT_INDEX.exec(statement);
    if (index) {
      const [, name, schema] = index as unknown as [string, string, string];
      if ((await client.query(INVALID_INDEX, [schema, name])).rowCount) {
        await client.query(
          `DROP INDEX CONCURRENTLY ${client.escapeIdentifier(schema)}.${client.escapeIdentifier(name)}`,
        );
      }
    }
    await client.query(statement);
  }
  await client.query(RECORD_VERSION, [migration.version, migration.name]);
}

async function lock(client: pg.Client): Promise<void> {
  for (;;) {
    const { rows } = await client.query<{ locked: boolean }>(TRY_LOCK, [MIGRATION_LOCK_KEY]);
    if (rows[0]?.locked) return;
    await new Promise((resolve) => setTimeout(resolve, LOCK_RETRY_MS));
  }
}

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
  /** Whether hookgate_runtime and hookgate_readonly exist (and were granted what exists now). */
  readonly roles: boolean;
}

export interface MigrateOptions {
  /** Create hookgate_runtime and hookgate_readonly if they do not exist (roles.ts). */
  readonly createRoles?: boolean;
  /** Stop after this version (an upgrade's test starts from a database of an earlier release). */
  readonly until?: number;
}

/**
 * Applies pending migrations and installs or upgrades pg-boss's schema, then grants the runtime
 * and read-only roles what now exists (when they exist). Concurrent migrators serialise on one
 * advisory lock: the second waits (retrying the lock), then finds nothing left to do. Each
 * migration is one transaction, unless it says otherwise (NO_TRANSACTION).
 */
export async function migrate(
  client: pg.Client,
  connectionString: string,
  options: MigrateOptions = {},
): Promise<MigrationReport> {
  await lock(client);
  try {
    await client.query(CREATE_LEDGER);
    const done = new Set(
      (await client.query<{ version: number }>(APPLIED_VERSIONS)).rows.map((r) => r.version),
    );
    const applied: string[] = [];
    for (const migration of readMigrations()) {
      if (done.has(migration.version)) continue;
      if (options.until !== undefined && migration.version > options.until) break;
      const transactional = !NO_TRANSACTION.test(migration.sql);
      try {
        if (transactional) {
          await client.query('BEGIN');
          await client.query(migration.sql);
          await client.query(RECORD_VERSION, [migration.version, migration.name]);
          await client.query('COMMIT');
        } else {
          await applyOutsideTransaction(client, migration);
        }
      } catch (error) {
        if (transactional) await client.query('ROLLBACK');
        throw new HookgateError(
          'migration_failed',
          `Migration ${migrationName(migration)} failed: ${(error as Error).message}`,
          { cause: error },
        );
      }
      applied.push(migrationName(migration));
    }
    // 0021 prepares the partitioned inbox; the conversion itself is online and in steps
    // (inbox/partitions.ts). Once partitioned, every migrate makes the partitions ahead.
    if (options.until === undefined || options.until >= PARTITIONED_INBOX_VERSION) {
      if (await convertInboxOnline(client)) applied.push(INBOX_CONVERSION);
      else await ensureInboxPartitions(client);
    }
    await installPgBoss(connectionString);
    const roles = await applyRoles(client, options.createRoles === true);
    return { applied, roles };
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
  if (!(await inboxIsPartitioned(db)))
    return 'the inbox is not partitioned yet (hookgate migrate converts it online; run it to the end)';
  return null;
}

/** The migrations this database lacks, by name, read without taking the migration lock. */
export async function unappliedMigrations(url: string): Promise<string[]> {
  const client = new pg.Client({ connectionString: url, application_name: 'hookgate-migrate' });
  await client.connect();
  try {
    const ledger = await client.query<{ exists: boolean }>(LEDGER_EXISTS);
    const done = new Set<number>();
    if (ledger.rows[0]?.exists) {
      for (const row of (await client.query<{ version: number }>(APPLIED_VERSIONS)).rows)
        done.add(row.version);
    }
    const pending = readMigrations()
      .filter((migration) => !done.has(migration.version))
      .map(migrationName);
    // The conversion migrate runs after 0021, for as long as the inbox is not partitioned.
    if (done.has(PARTITIONED_INBOX_VERSION) ? !(await inboxIsPartitioned(client)) : pending.length > 0)
      pending.push(INBOX_CONVERSION);
    return pending;
  } finally {
    await client.end();
  }
}
