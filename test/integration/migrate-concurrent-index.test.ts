import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Migration, readMigrations } from '../../services/core/db/migration-files.ts';
import { migrate, statementsOf } from '../../services/core/migrate/migrate.ts';
import { createTestDatabase, type TestDatabase } from '../support/database.ts';

// A migration whose first line is `-- hookgate: no transaction` runs statement by statement, for
// CREATE INDEX CONCURRENTLY: how an expand step adds an index to a large table in use
// (docs/releases.md). Writes keep flowing while it builds, and a build that stopped halfway is
// done again. Shown with a migration of the tests' own on a full hookgate.audit.
let db: TestDatabase;
const ROWS = 300_000;

const ACTOR_INDEX: Migration = {
  version: 9_000,
  name: 'test_audit_actor_idx',
  sql: '-- hookgate: no transaction\n-- why\nCREATE INDEX CONCURRENTLY IF NOT EXISTS audit_actor_idx ON hookgate.audit (actor, command, at);\n',
  compatibleFrom: null,
};
const WITH_INDEX = [...readMigrations(), ACTOR_INDEX];

async function migrator(url: string = db.url): Promise<readonly string[]> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return (await migrate(client, url, { migrations: WITH_INDEX })).applied;
  } finally {
    await client.end();
  }
}

async function indexValid(pool: pg.Pool): Promise<boolean | null> {
  const { rows } = await pool.query<{ valid: boolean }>(
    `SELECT i.indisvalid AS valid FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid WHERE c.relname = 'audit_actor_idx'`,
  );
  return rows[0]?.valid ?? null;
}

const FILL = `
  INSERT INTO hookgate.audit (actor, command, endpoint, count, dry_run, event_ids)
  SELECT 'op_' || (n % 5000), 'requeue', 'shop', n, false, ARRAY['evt_' || n]
    FROM generate_series(1, $1::int) AS n`;

beforeAll(async () => {
  // As an upgrade finds it: the table full, the index's migration not applied yet.
  db = await createTestDatabase();
  await db.pool.query(FILL, [ROWS]);
}, 300_000);

afterAll(async () => {
  await db?.drop();
});

describe('a no-transaction migration on a full table', () => {
  it('keeps writes flowing while it builds (a plain CREATE INDEX would make them wait)', async () => {
    const writes = new pg.Client({ connectionString: db.url });
    await writes.connect();
    // A write that would wait for a lock longer than this fails instead: the build must not block it.
    await writes.query(`SET lock_timeout = '500ms'`);
    let building = true;
    const refused: string[] = [];
    let inserted = 0;
    const writing = (async () => {
      while (building) {
        try {
          await writes.query(
            `INSERT INTO hookgate.audit (actor, command, count, dry_run) VALUES ('during', 'pause', $1, false)`,
            [inserted],
          );
        } catch (error) {
          refused.push(`${(error as { code?: string }).code}: ${(error as Error).message}`);
        }
        inserted += 1;
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
    })();
    const started = performance.now();
    try {
      expect(await migrator()).toEqual(['9000_test_audit_actor_idx']);
    } finally {
      building = false;
      await writing;
      await writes.end();
    }
    const buildMs = performance.now() - started;
    // The premise: the build lasted long enough for writes to happen during it.
    expect(inserted, `${inserted} writes in a ${buildMs.toFixed(0)} ms build`).toBeGreaterThanOrEqual(5);
    expect(refused).toEqual([]);
    expect(await indexValid(db.pool)).toBe(true);
  }, 300_000);

  it('drops and builds again an index a stopped build left invalid', async () => {
    await db.pool.query('DELETE FROM hookgate.schema_migrations WHERE version = 9000');
    // What an interrupted CREATE INDEX CONCURRENTLY leaves: the index, marked invalid.
    await db.pool.query(
      `UPDATE pg_index SET indisvalid = false WHERE indexrelid = 'hookgate.audit_actor_idx'::regclass`,
    );
    expect(await indexValid(db.pool)).toBe(false);
    expect(await migrator()).toEqual(['9000_test_audit_actor_idx']);
    expect(await indexValid(db.pool)).toBe(true);
    await db.pool.query('ANALYZE hookgate.audit');
    const plan = await db.pool.query<{ 'QUERY PLAN': string }>(
      `EXPLAIN SELECT id FROM hookgate.audit WHERE actor = 'op_7' AND command = 'requeue' ORDER BY at DESC LIMIT 5`,
    );
    expect(plan.rows.map((row) => row['QUERY PLAN']).join('\n')).toContain('audit_actor_idx');
  }, 300_000);

  it('reads a no-transaction migration statement by statement', () => {
    expect(
      statementsOf(
        '-- hookgate: no transaction\n-- why\nCREATE INDEX a ON t (x);\nCREATE INDEX b ON t (y);\n',
      ),
    ).toEqual(['CREATE INDEX a ON t (x)', 'CREATE INDEX b ON t (y)']);
  });
});
