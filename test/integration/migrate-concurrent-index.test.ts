import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { migrate, pendingMigrations, statementsOf } from '../../services/core/db/migrate.ts';
import { createTestDatabase, type TestDatabase } from '../support/database.ts';

// Migration 0012 builds its indexes CONCURRENTLY, outside a transaction: deliveries keep being
// claimed while a large inbox is indexed, and a build that stopped halfway is done again.
let db: TestDatabase;
const ROWS = 300_000;

async function migrator(until?: number, url: string = db.url): Promise<readonly string[]> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return (await migrate(client, url, until === undefined ? {} : { until })).applied;
  } finally {
    await client.end();
  }
}

async function indexState(name: string): Promise<boolean | null> {
  const { rows } = await db.pool.query<{ valid: boolean }>(
    `SELECT i.indisvalid AS valid FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid WHERE c.relname = $1`,
    [name],
  );
  return rows[0]?.valid ?? null;
}

beforeAll(async () => {
  // As an upgrade finds it: the inbox full, 0012 not applied yet (nor anything after it).
  db = await createTestDatabase({ migrated: false });
  await migrator(11);
  await db.pool.query(
    `INSERT INTO hookgate.inbox (endpoint, event_id, provider, event_type, entity_id, payload)
     SELECT 'shop', 'old_' || n, 'standard-webhooks', 'thing.updated', 'in_' || (n % 5000),
            jsonb_build_object('data', jsonb_build_object('customer', 'cus_' || (n % 9000), 'note', repeat('x', 40), 'n', n))
       FROM generate_series(1, $1::int) AS n`,
    [ROWS],
  );
}, 300_000);

afterAll(async () => {
  await db?.drop();
});

describe('migration 0012 on a full inbox', () => {
  it('keeps claims flowing while it builds (a plain CREATE INDEX would make them wait)', async () => {
    const claims = new pg.Client({ connectionString: db.url });
    await claims.connect();
    // A claim that would wait for a lock longer than this fails instead: the build must not block it.
    await claims.query(`SET lock_timeout = '500ms'`);
    let building = true;
    const refused: string[] = [];
    let inserted = 0;
    const claiming = (async () => {
      while (building) {
        try {
          await claims.query(
            `INSERT INTO hookgate.inbox (endpoint, event_id, provider, event_type, payload) VALUES ('shop', $1, 'standard-webhooks', 'thing.updated', '{}')`,
            [`during_${inserted}`],
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
      // 0012 and every migration after it, then the inbox's conversion to partitions (0021).
      expect(await migrator()).toContain('0012_console_search');
    } finally {
      building = false;
      await claiming;
      await claims.end();
    }
    const buildMs = performance.now() - started;
    // The premise: the build lasted long enough for claims to happen during it.
    expect(inserted, `${inserted} claims in a ${buildMs.toFixed(0)} ms build`).toBeGreaterThanOrEqual(5);
    expect(refused).toEqual([]);
    expect(await indexState('inbox_payload_path_idx')).toBe(true);
    expect(await indexState('inbox_entity_idx')).toBe(true);
    expect(await pendingMigrations(db.pool)).toBeNull();
  }, 300_000);

  it('drops and builds again an index a stopped build left invalid', async () => {
    const stopped = await createTestDatabase({ migrated: false });
    try {
      await migrator(12, stopped.url);
      await stopped.pool.query(
        `INSERT INTO hookgate.inbox (endpoint, event_id, provider, event_type, payload)
         SELECT 'shop', 'old_' || n, 'standard-webhooks', 't', jsonb_build_object('data', jsonb_build_object('customer', 'cus_' || (n % 900)))
           FROM generate_series(1, 20000) AS n`,
      );
      await stopped.pool.query('DELETE FROM hookgate.schema_migrations WHERE version >= 12');
      // What an interrupted CREATE INDEX CONCURRENTLY leaves: the index, marked invalid.
      await stopped.pool.query(
        `UPDATE pg_index SET indisvalid = false WHERE indexrelid = 'hookgate.inbox_payload_path_idx'::regclass`,
      );
      const valid = async () =>
        (
          await stopped.pool.query<{ valid: boolean }>(
            `SELECT i.indisvalid AS valid FROM pg_index i WHERE i.indexrelid = 'hookgate.inbox_payload_path_idx'::regclass`,
          )
        ).rows[0]?.valid;
      expect(await valid()).toBe(false);
      expect(await migrator(12, stopped.url)).toEqual(['0012_console_search']);
      expect(await valid()).toBe(true);
      await stopped.pool.query('ANALYZE hookgate.inbox');
      const plan = await stopped.pool.query<{ 'QUERY PLAN': string }>(
        `EXPLAIN SELECT event_id FROM hookgate.inbox WHERE payload @> '{"data":{"customer":"cus_7"}}'`,
      );
      expect(plan.rows.map((row) => row['QUERY PLAN']).join('\n')).toContain('inbox_payload_path_idx');
    } finally {
      await stopped.drop();
    }
  }, 300_000);

  it('reads a no-transaction migration statement by statement', () => {
    expect(
      statementsOf(
        '-- hookgate: no transaction\n-- why\nCREATE INDEX a ON t (x);\nCREATE INDEX b ON t (y);\n',
      ),
    ).toEqual(['CREATE INDEX a ON t (x)', 'CREATE INDEX b ON t (y)']);
  });
});
