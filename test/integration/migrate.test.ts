// `hookgate migrate` (services/core/migrate/migrate.ts), on PostgreSQL 15 and 18: the baseline makes
// every table, function and schema the code's statements name; concurrent migrators serialise on
// the advisory lock; a second run changes nothing; the ledger records the release; and a database
// this hookgate cannot take forward is refused with a sentence (a development build's ledger from
// before the baseline, a newer release's schema: docs/releases.md).
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { migrationName, readMigrations } from '../../services/core/db/migration-files.ts';
import {
  migrate,
  newerSchemaNotice,
  pendingMigrations,
  unappliedMigrations,
} from '../../services/core/migrate/migrate.ts';
import { HOOKGATE_VERSION } from '../../services/core/version.ts';
import { createTestDatabase, type TestDatabase } from '../support/database.ts';
import { describeSchema } from '../support/schema-catalog.ts';

let db: TestDatabase;

beforeAll(async () => {
  db = await createTestDatabase({ migrated: false });
});

afterAll(async () => {
  await db?.drop();
});

async function migrator(url = db.url): Promise<string[]> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return [...(await migrate(client, url)).applied];
  } finally {
    await client.end();
  }
}

function sources(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) return sources(path);
    return path.endsWith('.ts') ? [path] : [];
  });
}

/** Every `hookgate.x`, `billing.x` and `pgboss.x` the code's SQL (its template literals) spells. */
function namedObjects(): string[] {
  const names = new Set<string>();
  for (const file of sources('services')) {
    for (const literal of readFileSync(file, 'utf8').matchAll(/`([^`]*)`/g)) {
      const sql = literal[1]!;
      // After a keyword that names a table, or called as a function.
      const named =
        /\b(?:FROM|JOIN|INTO|UPDATE|TABLE|ON|ONLY|TRUNCATE|FUNCTION|LOCK)\s+(hookgate|billing|pgboss)\.([a-z_][a-z0-9_]*)(?![.\w])|\b(hookgate|billing|pgboss)\.([a-z_][a-z0-9_]*)\(/gi;
      for (const match of sql.matchAll(named)) names.add(`${match[1] ?? match[3]}.${match[2] ?? match[4]}`);
    }
  }
  return [...names].sort();
}

describe('hookgate migrate', () => {
  it('reports an unmigrated database', async () => {
    expect(await pendingMigrations(db.pool)).toBe('no hookgate migration has been applied');
  });

  it('serialises concurrent migrators: both succeed, every migration is applied once', async () => {
    const [first, second] = await Promise.all([migrator(), migrator()]);
    const all = readMigrations().map(migrationName);
    expect(all[0]).toBe('0001_baseline');
    // One of them did all the work; the other waited on the lock and found nothing to do.
    expect([first, second].sort((a, b) => a.length - b.length)).toEqual([[], all]);
    const ledger = await db.pool.query(
      'SELECT version, release, compatible_from FROM hookgate.schema_migrations ORDER BY version',
    );
    expect(ledger.rows.map((r) => r.version)).toEqual(readMigrations().map((m) => m.version));
    expect(ledger.rows[0]).toEqual({ version: 1, release: HOOKGATE_VERSION, compatible_from: null });
    const boss = await db.pool.query('SELECT version FROM pgboss.version');
    expect(boss.rowCount).toBe(1);
    expect(await pendingMigrations(db.pool)).toBeNull();
  });

  it('makes every table, view, sequence and function the code names, and the partitioned inbox', async () => {
    const named = namedObjects();
    // The premise: the scan sees the code's statements.
    expect(named).toEqual(
      expect.arrayContaining([
        'hookgate.inbox',
        'hookgate.inbox_keys',
        'hookgate.inbox_create_partitions',
        'billing.ledger_entries',
        'pgboss.job',
      ]),
    );
    expect(named.length).toBeGreaterThan(20);
    const { rows } = await db.pool.query<{ name: string }>(
      `SELECT name FROM unnest($1::text[]) AS name
        WHERE to_regclass(name) IS NULL AND to_regproc(name) IS NULL`,
      [named],
    );
    expect(rows.map((r) => r.name)).toEqual([]);
    const inbox = await db.pool.query(
      `SELECT relkind::text FROM pg_class WHERE oid = 'hookgate.inbox'::regclass`,
    );
    expect(inbox.rows[0].relkind).toBe('p');
  });

  it('is idempotent: a second run applies nothing and changes no catalog line', async () => {
    const before = await describeSchema(db.pool);
    expect(await migrator()).toEqual([]);
    expect(await describeSchema(db.pool)).toEqual(before);
    expect(await unappliedMigrations(db.url)).toEqual([]);
  });
});

describe('a database this hookgate cannot take forward', () => {
  it("refuses a development build's ledger from before the baseline, saying what to do", async () => {
    const dev = await createTestDatabase({ migrated: false });
    try {
      await dev.pool.query(`CREATE SCHEMA hookgate;
        CREATE TABLE hookgate.schema_migrations (version integer PRIMARY KEY, name text NOT NULL,
                                                 applied_at timestamptz NOT NULL DEFAULT now());
        INSERT INTO hookgate.schema_migrations (version, name) VALUES (1, 'inbox'), (2, 'worker'), (21, 'inbox_partitions')`);
      const refused = migrator(dev.url);
      await expect(refused).rejects.toMatchObject({ code: 'schema_unrecognised' });
      await expect(refused).rejects.toThrow(
        /lists 0001_inbox.*never had: it was migrated by a development build from before the 0\.1\.0 baseline.*Migrate a new, empty database/,
      );
      await expect(pendingMigrations(dev.pool)).rejects.toMatchObject({ code: 'schema_unrecognised' });
      await expect(unappliedMigrations(dev.url)).rejects.toMatchObject({ code: 'schema_unrecognised' });
      // Nothing was applied to it.
      expect((await dev.pool.query(`SELECT to_regclass('hookgate.inbox') AS t`)).rows[0].t).toBeNull();
    } finally {
      await dev.drop();
    }
  });

  it("refuses a development build's ledger from before migrations were folded into the baseline", async () => {
    const dev = await createTestDatabase();
    try {
      // 0001_baseline, then migrations numbered up to 0032 that this hookgate never had: not a
      // newer release's (nothing is served on it, and migrate says what to do).
      await dev.pool.query(
        `INSERT INTO hookgate.schema_migrations (version, name, release) VALUES
           (22, 'one_outbound_path', $1), (30, 'reconcile_request', $1)`,
        [HOOKGATE_VERSION],
      );
      const refused = migrator(dev.url);
      await expect(refused).rejects.toMatchObject({ code: 'schema_unrecognised' });
      await expect(refused).rejects.toThrow(
        /lists 0022_one_outbound_path, 0030_reconcile_request, which hookgate/,
      );
      await expect(pendingMigrations(dev.pool)).rejects.toMatchObject({ code: 'schema_unrecognised' });
      await expect(unappliedMigrations(dev.url)).rejects.toMatchObject({ code: 'schema_unrecognised' });
    } finally {
      await dev.drop();
    }
  });

  it("refuses to migrate a newer release's schema backwards, and serves it while it still serves this release", async () => {
    const newer = await createTestDatabase();
    try {
      // As the next release's migrate leaves it: an expand step this hookgate does not have.
      await newer.pool.query(
        `INSERT INTO hookgate.schema_migrations (version, name, release, compatible_from)
         VALUES (9001, 'next_expand', '99.0.0', NULL)`,
      );
      const refused = migrator(newer.url);
      await expect(refused).rejects.toMatchObject({ code: 'schema_newer' });
      await expect(refused).rejects.toThrow(
        new RegExp(
          `migrated by hookgate 99\\.0\\.0 \\(9001_next_expand\\); hookgate ${HOOKGATE_VERSION.replaceAll('.', '\\.')} does not migrate a database backwards.*helm rollback`,
        ),
      );
      await expect(unappliedMigrations(newer.url)).rejects.toMatchObject({ code: 'schema_newer' });
      // serve and the one-shot commands run on it, and say so once.
      expect(await pendingMigrations(newer.pool)).toBeNull();
      expect(await newerSchemaNotice(newer.pool)).toMatch(
        /migrated by hookgate 99\.0\.0 \(9001_next_expand\)/,
      );

      // A contract step of a later release removed what this one uses: refused to everyone.
      await newer.pool.query(
        `INSERT INTO hookgate.schema_migrations (version, name, release, compatible_from)
         VALUES (9002, 'next_contract', '99.1.0', '99.0.0')`,
      );
      await expect(pendingMigrations(newer.pool)).rejects.toThrow(
        /its schema no longer serves hookgate .*releases before 99\.0\.0 use\. Run hookgate 99\.0\.0 or newer, or restore the backup/,
      );
      await expect(migrator(newer.url)).rejects.toMatchObject({ code: 'schema_newer' });
    } finally {
      await newer.drop();
    }
  });
});
