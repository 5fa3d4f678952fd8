// Least privilege (services/core/db/roles.ts), on PostgreSQL 15 and 18: a login in
// hookgate_runtime reads and writes hookgate's and pg-boss's rows but can change no schema;
// a login in hookgate_readonly reads and writes nothing else; tables added by a later migration
// are granted by that migration run.
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { migrate } from '../../services/core/migrate/migrate.ts';
import { createTestDatabase, type TestDatabase } from '../support/database.ts';

let db: TestDatabase;
let runtime: pg.Pool;
let readonly: pg.Pool;
const PASSWORD = 'not-a-secret-test-only';

/** A login member of `role`, on the test database (roles are cluster-wide: unique names). */
async function login(role: string): Promise<pg.Pool> {
  const name = `${role.replace('hookgate_', 'hg')}_${randomBytes(4).toString('hex')}`;
  await db.pool.query(`CREATE ROLE ${name} LOGIN PASSWORD '${PASSWORD}' IN ROLE ${role}`);
  const url = new URL(db.url);
  url.username = name;
  url.password = PASSWORD;
  const pool = new pg.Pool({ connectionString: url.toString(), max: 1 });
  pool.on('error', () => {});
  return pool;
}

beforeAll(async () => {
  db = await createTestDatabase({ migrated: false });
  const client = new pg.Client({ connectionString: db.url });
  await client.connect();
  expect((await migrate(client, db.url, { createRoles: true })).roles).toBe(true);
  await client.end();
  runtime = await login('hookgate_runtime');
  readonly = await login('hookgate_readonly');
});

afterAll(async () => {
  await runtime?.end();
  await readonly?.end();
  await db?.drop();
});

const INSERT_EVENT = `INSERT INTO hookgate.inbox (endpoint, event_id, provider, event_type, payload, status)
  VALUES ('alpha', $1, 'standard-webhooks', 't', '{}', 'pending')`;

describe('the runtime role', () => {
  it("reads and writes hookgate's, pg-boss's and billing's rows", async () => {
    await runtime.query(INSERT_EVENT, ['evt_runtime']);
    await runtime.query(`UPDATE hookgate.inbox SET status = 'processed' WHERE event_id = 'evt_runtime'`);
    await runtime.query(`DELETE FROM hookgate.inbox WHERE event_id = 'evt_runtime'`);
    await runtime.query('SELECT count(*) FROM pgboss.job');
    await runtime.query('SELECT count(*) FROM billing.ledger_entries');
    // pg-boss's supervision stamps its times on the version row.
    await runtime.query('UPDATE pgboss.version SET monitor_backoff_on = monitor_backoff_on');
    // `serve` checks the ledger before starting.
    expect(
      (await runtime.query('SELECT count(*)::int AS n FROM hookgate.schema_migrations')).rows[0].n,
    ).toBeGreaterThan(0);
  });

  it.each([
    ['DROP TABLE hookgate.inbox'],
    ['ALTER TABLE hookgate.inbox ADD COLUMN extra integer'],
    ['CREATE INDEX ON hookgate.inbox (received_at)'],
    ['TRUNCATE hookgate.inbox'],
    ['DROP TABLE pgboss.job'],
    ['CREATE TABLE hookgate.extra (id integer)'],
    ['CREATE TABLE pgboss.extra (id integer)'],
    // PostgreSQL 15 and later: `public` no longer takes every role's tables.
    ['CREATE TABLE public.extra (id integer)'],
    ['CREATE SCHEMA extra'],
    [`INSERT INTO hookgate.schema_migrations (version, name) VALUES (9999, 'forged')`],
    ['DELETE FROM pgboss.version'],
    ['UPDATE pgboss.version SET version = version + 1'],
    // The partitioned inbox: partitions only through the functions below.
    ['ALTER TABLE hookgate.inbox DETACH PARTITION hookgate.inbox_default'],
    ['DROP TABLE hookgate.inbox_default'],
    [
      'CREATE TABLE hookgate.inbox_p20990101 PARTITION OF hookgate.inbox FOR VALUES FROM (MAXVALUE) TO (MAXVALUE)',
    ],
    [`INSERT INTO hookgate.inbox_partitions (name, to_at) VALUES ('inbox_default', now())`],
    [`DELETE FROM hookgate.inbox_partitions`],
  ])('cannot %s', async (statement) => {
    await expect(runtime.query(statement)).rejects.toMatchObject({ code: '42501' });
  });

  it("makes and drops the inbox's partitions through the migration's functions only", async () => {
    const before = (await runtime.query('SELECT count(*)::int AS n FROM hookgate.inbox_partitions')).rows[0]
      .n;
    const made = await runtime.query(
      `SELECT hookgate.inbox_create_partitions(now() + interval '40 days', 7) AS made`,
    );
    expect(made.rows[0].made).toBeGreaterThan(0);
    const last = (
      await runtime.query<{ name: string; to_at: Date }>(
        'SELECT name, to_at FROM hookgate.inbox_partitions ORDER BY to_at DESC LIMIT 1',
      )
    ).rows[0]!;
    // A partition not yet past the given time is refused; one that is goes.
    await expect(
      runtime.query('SELECT * FROM hookgate.inbox_drop_partition($1, now(), 100)', [last.name]),
    ).rejects.toMatchObject({ code: '22023' });
    const dropped = await runtime.query('SELECT moved FROM hookgate.inbox_drop_partition($1, $2, 100)', [
      last.name,
      last.to_at,
    ]);
    expect(dropped.rows[0].moved).toBe('0');
    expect((await runtime.query('SELECT count(*)::int AS n FROM hookgate.inbox_partitions')).rows[0].n).toBe(
      before + made.rows[0].made - 1,
    );
    // The read-only role may not.
    await expect(
      readonly.query(`SELECT hookgate.inbox_create_partitions(now() + interval '50 days', 7)`),
    ).rejects.toMatchObject({ code: '42501' });
  });
});

describe("the runtime role and the operators' functions", () => {
  it('calls requeue, discard, quarantine release and drop, as the CLI does', async () => {
    expect(
      (
        await runtime.query(
          `SELECT * FROM hookgate.requeue_events('alpha', '{dead}', NULL, NULL, NULL, NULL, 10, 100)`,
        )
      ).rows,
    ).toEqual([]);
    expect(
      (
        await runtime.query(
          `SELECT * FROM hookgate.discard_events('alpha', '{dead}', NULL, NULL, NULL, NULL, 10, 'ops', 'why')`,
        )
      ).rows,
    ).toEqual([]);
    expect(
      (
        await runtime.query(
          `SELECT outcome FROM hookgate.release_quarantined(1, 'p', 'e', 't', NULL, NULL, NULL, '{}', false, false, 'ops', NULL)`,
        )
      ).rows,
    ).toEqual([{ outcome: 'unknown' }]);
    expect(
      (await runtime.query(`SELECT * FROM hookgate.drop_quarantined('{1}', 'ops', 'why')`)).rows,
    ).toEqual([]);
  });

  it.each([
    [`INSERT INTO hookgate.inbox_moves (xact) VALUES (pg_current_xact_id())`],
    [`SELECT hookgate.insert_apply_jobs('alpha', ARRAY[gen_random_uuid()], ARRAY['[]'::jsonb])`],
  ])('cannot %s', async (statement) => {
    await expect(runtime.query(statement)).rejects.toMatchObject({ code: '42501' });
  });

  it('the read-only role calls none of them', async () => {
    await expect(
      readonly.query(
        `SELECT * FROM hookgate.requeue_events('alpha', '{dead}', NULL, NULL, NULL, NULL, 10, 100)`,
      ),
    ).rejects.toMatchObject({ code: '42501' });
  });
});

describe('the read-only role', () => {
  it("reads hookgate's and pg-boss's tables", async () => {
    await db.pool.query(INSERT_EVENT, ['evt_readonly']);
    const backlog = await readonly.query(
      `SELECT count(*)::int AS n FROM hookgate.inbox WHERE status = 'pending'`,
    );
    expect(backlog.rows[0].n).toBe(1);
    await readonly.query('SELECT count(*) FROM pgboss.job');
  });

  it.each([
    [`UPDATE hookgate.inbox SET status = 'processed'`],
    ['DELETE FROM pgboss.job'],
    ['SELECT count(*) FROM billing.ledger_entries'],
    ['CREATE TABLE public.extra_ro (id integer)'],
  ])('cannot %s', async (statement) => {
    await expect(readonly.query(statement)).rejects.toMatchObject({ code: '42501' });
  });
});

describe('grants after each migration', () => {
  it('a table a later migration adds is granted by that run, without --create-roles', async () => {
    await db.pool.query('CREATE TABLE hookgate.added_later (id integer)');
    await expect(runtime.query('INSERT INTO hookgate.added_later VALUES (1)')).rejects.toMatchObject({
      code: '42501',
    });
    const client = new pg.Client({ connectionString: db.url });
    await client.connect();
    expect((await migrate(client, db.url)).roles).toBe(true);
    await client.end();
    await runtime.query('INSERT INTO hookgate.added_later VALUES (1)');
    expect((await readonly.query('SELECT count(*)::int AS n FROM hookgate.added_later')).rows[0].n).toBe(1);
  });
});
