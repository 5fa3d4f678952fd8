import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { migrate, migrationName, pendingMigrations, readMigrations } from '../../services/core/db/migrate.ts';
import { createTestDatabase, type TestDatabase } from '../support/database.ts';

let db: TestDatabase;

beforeAll(async () => {
  db = await createTestDatabase({ migrated: false });
});

afterAll(async () => {
  await db?.drop();
});

async function migrator(): Promise<string[]> {
  const client = new pg.Client({ connectionString: db.url });
  await client.connect();
  try {
    return [...(await migrate(client, db.url)).applied];
  } finally {
    await client.end();
  }
}

describe('hookgate migrate', () => {
  it('reports an unmigrated database', async () => {
    expect(await pendingMigrations(db.pool)).toBe('no hookgate migration has been applied');
  });

  it('serialises concurrent migrators: both succeed, every migration is applied once', async () => {
    const [first, second] = await Promise.all([migrator(), migrator()]);
    const all = readMigrations().map(migrationName);
    expect(all[0]).toBe('0001_inbox');
    // One of them did all the work; the other waited on the lock and found nothing to do.
    // … and the inbox's online conversion to partitions, which 0021 prepares.
    expect([first, second].sort((a, b) => a.length - b.length)).toEqual([
      [],
      [...all, 'inbox partitioned (online conversion)'],
    ]);
    const ledger = await db.pool.query('SELECT version FROM hookgate.schema_migrations ORDER BY version');
    expect(ledger.rows.map((r) => r.version)).toEqual(readMigrations().map((m) => m.version));
    const boss = await db.pool.query('SELECT version FROM pgboss.version');
    expect(boss.rowCount).toBe(1);
    expect(await pendingMigrations(db.pool)).toBeNull();
  });

  it('is idempotent', async () => {
    expect(await migrator()).toEqual([]);
  });
});
