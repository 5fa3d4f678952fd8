import pg from 'pg';
import { PgBoss } from 'pg-boss';
import { type Migration, migrationName, readMigrations } from '../db/migration-files.ts';
import { applyRoles } from '../db/roles.ts';
import { HookgateError } from '../errors.ts';
import { ensureInboxPartitions } from '../inbox/partitions.ts';
import { PGBOSS_SCHEMA } from '../queue/names.ts';
import { compareVersions, HOOKGATE_VERSION } from '../version.ts';

/** One advisory lock key for every migrator of every hookgate version (arbitrary, fixed). */
const MIGRATION_LOCK_KEY = 7_301_244_019;

// Tried, not waited for: a session blocked in pg_advisory_lock holds a snapshot for as long as
// it waits, and CREATE INDEX CONCURRENTLY (below) waits for every older snapshot to end, so a
// second migrator waiting on the lock would stall the first one's index build.
const TRY_LOCK = 'SELECT pg_try_advisory_lock($1) AS locked';
const LOCK_RETRY_MS = 250;
const UNLOCK = 'SELECT pg_advisory_unlock($1)';
/**
 * The ledger: one row per migration applied, with the hookgate release that applied it and the
 * oldest release whose code runs on the schema it leaves (a contract step's, docs/releases.md).
 * Every release reads it, older ones included: its shape never changes.
 */
const CREATE_LEDGER = `
  CREATE SCHEMA IF NOT EXISTS hookgate;
  CREATE TABLE IF NOT EXISTS hookgate.schema_migrations (
    version         integer     PRIMARY KEY,
    name            text        NOT NULL,
    applied_at      timestamptz NOT NULL DEFAULT now(),
    release         text,
    compatible_from text
  )`;
// Read through to_jsonb: a ledger made before 0.1.0 lacks the last two columns, and must still be
// recognised as such rather than fail on a missing column.
const LEDGER = `
  SELECT version, name, to_jsonb(m) ->> 'release' AS release, to_jsonb(m) ->> 'compatible_from' AS compatible_from
    FROM hookgate.schema_migrations m ORDER BY version`;
const LEDGER_EXISTS = `SELECT to_regclass('hookgate.schema_migrations') IS NOT NULL AS exists`;
const RECORD_VERSION = `
  INSERT INTO hookgate.schema_migrations (version, name, release, compatible_from) VALUES ($1, $2, $3, $4)`;

/**
 * A migration whose first line is this runs outside a transaction, statement by statement: for
 * CREATE INDEX CONCURRENTLY, which builds an index on a table in use without blocking its writes
 * (a plain CREATE INDEX on a large table would hold every write for the whole build). Its
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
  await client.query(RECORD_VERSION, recordOf(migration));
}

function recordOf(migration: Migration): unknown[] {
  return [migration.version, migration.name, HOOKGATE_VERSION, migration.compatibleFrom];
}

async function lock(client: pg.Client): Promise<void> {
  for (;;) {
    const { rows } = await client.query<{ locked: boolean }>(TRY_LOCK, [MIGRATION_LOCK_KEY]);
    if (rows[0]?.locked) return;
    await new Promise((resolve) => setTimeout(resolve, LOCK_RETRY_MS));
  }
}

interface LedgerRow {
  readonly version: number;
  readonly name: string;
  readonly release: string | null;
  readonly compatible_from: string | null;
}

/** What a database's ledger says against this hookgate's migrations. */
interface SchemaState {
  /** This hookgate's migrations the database lacks, in order. */
  readonly missing: readonly Migration[];
  /** Applied migrations this hookgate never had, at versions it knows: another line of history. */
  readonly foreign: readonly LedgerRow[];
  /** Applied migrations past this hookgate's newest: a newer release migrated the database. */
  readonly newer: readonly LedgerRow[];
}

/**
 * The numbers development builds gave migrations before they were folded into 0001_baseline
 * (0002 to 0032): a ledger row at one of them that this hookgate does not have is another line of
 * history, never a newer release's. Later migrations are numbered above it.
 */
const BASELINE_HISTORY = 32;

async function readSchemaState(
  db: Pick<pg.ClientBase | pg.Pool, 'query'>,
  migrations: readonly Migration[],
): Promise<SchemaState> {
  const ledger = (await db.query<LedgerRow>(LEDGER)).rows;
  const known = new Map(migrations.map((m) => [m.version, m.name]));
  const newest = Math.max(BASELINE_HISTORY, ...migrations.map((m) => m.version));
  const applied = new Set(ledger.filter((row) => known.get(row.version) === row.name).map((r) => r.version));
  return {
    missing: migrations.filter((m) => !applied.has(m.version)),
    foreign: ledger.filter((row) => row.version <= newest && known.get(row.version) !== row.name),
    newer: ledger.filter((row) => row.version > newest),
  };
}

/**
 * Refuses a database this hookgate cannot take forward: one whose ledger lists migrations it
 * never had (schema_unrecognised: a development build's from before the 0.1.0 baseline), and,
 * for `migrate`, one a newer release migrated (schema_newer: nothing is migrated backwards). A
 * newer schema that still serves this release is refused only to `migrate`; its `serve` runs.
 */
function refuse(state: SchemaState, forMigrate: boolean): void {
  if (state.foreign.length > 0) {
    throw new HookgateError(
      'schema_unrecognised',
      `This database's hookgate.schema_migrations lists ${names(state.foreign)}, which hookgate ${HOOKGATE_VERSION} never had: it was migrated by a development build from before the 0.1.0 baseline (or another line of history), and hookgate cannot take it forward. Migrate a new, empty database (or drop this one's schemas hookgate, billing and pgboss) with "hookgate migrate".`,
    );
  }
  if (state.newer.length === 0) return;
  const by = newerRelease(state.newer);
  const needs = oldestServed(state.newer);
  if (needs !== null && compareVersions(HOOKGATE_VERSION, needs) < 0) {
    throw new HookgateError(
      'schema_newer',
      `This database was migrated by hookgate ${by} (${names(state.newer)}), and its schema no longer serves hookgate ${HOOKGATE_VERSION}: a contract step removed what releases before ${needs} use. Run hookgate ${needs} or newer, or restore the backup taken before that upgrade.`,
    );
  }
  if (forMigrate) {
    throw new HookgateError(
      'schema_newer',
      `This database was migrated by hookgate ${by} (${names(state.newer)}); hookgate ${HOOKGATE_VERSION} does not migrate a database backwards. Its gateways and workers run on this schema as it is (every migration after a release keeps that release working: docs/releases.md), so roll back the pods without migrating ("helm rollback" runs no migration Job), or run hookgate ${by}'s migrate.`,
    );
  }
}

function names(rows: readonly LedgerRow[]): string {
  const listed = rows.slice(0, 3).map(migrationName).join(', ');
  return rows.length > 3 ? `${listed} and ${rows.length - 3} more` : listed;
}

function newerRelease(rows: readonly LedgerRow[]): string {
  const releases = rows.map((row) => row.release).filter((r): r is string => r !== null);
  return releases.sort(compareVersions).at(-1) ?? 'a newer release';
}

function oldestServed(rows: readonly LedgerRow[]): string | null {
  const floors = rows.map((row) => row.compatible_from).filter((r): r is string => r !== null);
  return floors.sort(compareVersions).at(-1) ?? null;
}

export interface MigrationReport {
  readonly applied: readonly string[];
  /** Whether hookgate_runtime and hookgate_readonly exist (and were granted what exists now). */
  readonly roles: boolean;
}

export interface MigrateOptions {
  /** Create hookgate_runtime and hookgate_readonly if they do not exist (roles.ts). */
  readonly createRoles?: boolean;
  /** The migrations to apply: migrations/*.sql unless given (tests of migrate's own mechanisms). */
  readonly migrations?: readonly Migration[];
}

/**
 * Applies pending migrations and installs or upgrades pg-boss's schema, makes the inbox's
 * partitions ahead, then grants the runtime and read-only roles what now exists (when they
 * exist). Concurrent migrators serialise on one advisory lock: the second waits (retrying the
 * lock), then finds nothing left to do. Each migration is one transaction, unless it says
 * otherwise (NO_TRANSACTION).
 */
export async function migrate(
  client: pg.Client,
  connectionString: string,
  options: MigrateOptions = {},
): Promise<MigrationReport> {
  await lock(client);
  try {
    await client.query(CREATE_LEDGER);
    const state = await readSchemaState(client, options.migrations ?? readMigrations());
    refuse(state, true);
    const applied: string[] = [];
    for (const migration of state.missing) {
      const transactional = !NO_TRANSACTION.test(migration.sql);
      try {
        if (transactional) {
          await client.query('BEGIN');
          await client.query(migration.sql);
          await client.query(RECORD_VERSION, recordOf(migration));
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
    await ensureInboxPartitions(client);
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

/**
 * Why this database cannot be served yet (null: it can). Throws when this hookgate can never
 * serve it: a ledger it does not recognise, or a newer schema that no longer serves it.
 */
export async function pendingMigrations(db: pg.Pool | pg.Client): Promise<string | null> {
  const ledger = await db.query<{ exists: boolean }>(LEDGER_EXISTS);
  if (!ledger.rows[0]?.exists) return 'no hookgate migration has been applied';
  const state = await readSchemaState(db, readMigrations());
  refuse(state, false);
  if (state.missing.length > 0)
    return `${state.missing.length} migration(s) are not applied (first: ${migrationName(state.missing[0]!)})`;
  return null;
}

/**
 * Said once at start when a newer release migrated this database (after `helm rollback`, or
 * while a rolling upgrade is under way): this release runs on it, as the compatibility rule
 * promises. Null when the schema is this release's own.
 */
export async function newerSchemaNotice(db: pg.Pool): Promise<string | null> {
  const { newer } = await readSchemaState(db, readMigrations());
  if (newer.length === 0) return null;
  return `this database was migrated by hookgate ${newerRelease(newer)} (${names(newer)}); hookgate ${HOOKGATE_VERSION} runs on its schema (docs/releases.md)`;
}

/** The migrations this database lacks, by name, read without taking the migration lock. */
export async function unappliedMigrations(url: string): Promise<string[]> {
  const client = new pg.Client({ connectionString: url, application_name: 'hookgate-migrate' });
  await client.connect();
  try {
    const ledger = await client.query<{ exists: boolean }>(LEDGER_EXISTS);
    if (!ledger.rows[0]?.exists) return readMigrations().map(migrationName);
    const state = await readSchemaState(client, readMigrations());
    refuse(state, true);
    return state.missing.map(migrationName);
  } finally {
    await client.end();
  }
}
