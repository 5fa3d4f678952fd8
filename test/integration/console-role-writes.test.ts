// What the console's database role can write, tried as an attacker holding its login would
// (services/core/db/roles.ts, the baseline's definer functions), on PostgreSQL 18 and 15: every
// table it could write, the functions it may call with hostile arguments, pg-boss's tables and
// session settings that must not switch deduplication off. No key is claimed twice, no job is
// created for a row that does not exist or for a queue that is not an apply queue, nothing is
// applied twice.
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { listInboxPartitions } from '../../services/core/inbox/partitions.ts';
import { migrate } from '../../services/core/migrate/migrate.ts';
import { createBoss } from '../../services/core/queue/boss.ts';
import { ensureQueues } from '../../services/core/queue/queues.ts';
import { createTestDatabase, type TestDatabase } from '../support/database.ts';

const PASSWORD = 'not-a-secret-test-only';
let db: TestDatabase;
let consoleLogin: pg.Pool;
let runtimeLogin: pg.Pool;
let held: string;
let released: string;

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
  consoleLogin = await login('hookgate_console');
  runtimeLogin = await login('hookgate_runtime');
  // The queues the gateways and workers make; `forward` is one that is not an apply queue.
  const owner = createBoss({ connectionString: db.url, max: 1, supervise: false, applicationName: 'owner' });
  owner.on('error', () => {});
  await owner.start();
  await ensureQueues(owner, ['shop']);
  await owner.createQueue('hookgate.outbox.forward');
  await owner.stop({ graceful: false });
  // Received in a week partition, as every event is once the first midnight after the inbox was
  // partitioned has passed: a second row of the same key would go to another partition, where no
  // unique index of the first one's could stop it.
  const week = (await listInboxPartitions(db.pool)).find((p) => p.from_at !== null)!;
  await db.pool.query(
    `INSERT INTO hookgate.inbox (endpoint, event_id, provider, event_type, payload, status, attempts, processed_at, received_at)
     VALUES ('shop', 'evt_done', 'standard-webhooks', 'order.created', '{"n":1}', 'processed', 1, now(), $1),
            ('shop', 'evt_dead', 'standard-webhooks', 'order.created', '{"n":2}', 'dead', 8, NULL, $1),
            -- An endpoint no gateway or worker ever served: it has no queue.
            ('gone', 'evt_gone', 'standard-webhooks', 'order.created', '{"n":3}', 'dead', 8, NULL, $1)`,
    [new Date(week.from_at!.getTime() + 3_600_000)],
  );
  const rows = (
    await db.pool.query<{ id: string }>(
      `INSERT INTO hookgate.quarantine (endpoint, reason, message, body, headers, body_digest, released_at, settled_by)
       SELECT 'shop', 'event_type_missing', 'no type', convert_to(b, 'UTF8'), '{}', sha256(convert_to(b, 'UTF8')), r, s
         FROM (VALUES ('{"kind":"order.created","n":10}', NULL::timestamptz, NULL::text),
                      ('{"kind":"order.created","n":11}', now(), 'ops')) AS v(b, r, s)
       RETURNING id::text AS id`,
    )
  ).rows;
  held = rows[0]!.id;
  released = rows[1]!.id;
});

afterAll(async () => {
  await consoleLogin?.end();
  await runtimeLogin?.end();
  await db?.drop();
});

/** Every job there is, and whether each is an apply job of its endpoint naming only rows that exist. */
async function jobs(): Promise<{ name: string; sound: boolean }[]> {
  const { rows } = await db.pool.query<{ name: string; sound: boolean }>(
    `SELECT j.name,
            j.name = 'hookgate.apply.' || (j.data->>'endpoint')
            AND NOT EXISTS (SELECT 1 FROM jsonb_array_elements_text(j.data->'eventIds') e(id)
                             WHERE NOT EXISTS (SELECT 1 FROM hookgate.inbox i
                                                WHERE i.endpoint = j.data->>'endpoint' AND i.event_id = e.id)) AS sound
       FROM pgboss.job j ORDER BY j.created_on, j.id`,
  );
  return rows;
}

async function rowsOf(eventId: string): Promise<{ status: string }[]> {
  return (
    await db.pool.query(`SELECT status FROM hookgate.inbox WHERE endpoint = 'shop' AND event_id = $1`, [
      eventId,
    ])
  ).rows;
}

const DUPLICATE_ROW = `INSERT INTO hookgate.inbox (endpoint, event_id, provider, event_type, payload, status)
  VALUES ('shop', 'evt_done', 'standard-webhooks', 'order.created', '{"n":1}', 'pending')`;

describe("the console's login writes nothing but its actions' own writes", () => {
  it.each([
    // Session settings a key trigger could trust to let a second row for an applied event past it.
    [`SET hookgate.inbox_moving = 'on'; ${DUPLICATE_ROW}`],
    [`SET hookgate.inbox_moving_key = E'shop\\x1fevt_done'; ${DUPLICATE_ROW}`],
    [DUPLICATE_ROW],
    [
      `INSERT INTO hookgate.inbox (endpoint, event_id, provider, event_type, payload, status)
       VALUES ('shop', 'evt_forged', 'standard-webhooks', 'order.created', '{"forged":true}', 'pending')`,
    ],
    [`INSERT INTO hookgate.inbox_keys (endpoint, event_id, received_at) VALUES ('shop', 'evt_squat', now())`],
    [
      `INSERT INTO hookgate.inbox_raw (endpoint, event_id, body, headers) VALUES ('shop', 'evt_done', '\\x00', '{}')`,
    ],
    [
      `INSERT INTO hookgate.delivery_counts (endpoint, minute, shard, accepted) VALUES ('shop', now(), 1, 1000)`,
    ],
    // An applied event back to pending, for the sweeper to apply again; a row handed to another job.
    [`UPDATE hookgate.inbox SET status = 'pending', processed_at = NULL WHERE event_id = 'evt_done'`],
    [`UPDATE hookgate.inbox SET dispatch_job = gen_random_uuid() WHERE event_id = 'evt_dead'`],
    // pg-boss's jobs: any queue, through the parent or the partition.
    [
      `INSERT INTO pgboss.job (id, name, data) VALUES (gen_random_uuid(), 'hookgate.outbox.forward',
         '{"url":"http://127.0.0.1:9/x?db=\${DATABASE_URL}"}')`,
    ],
    [
      `INSERT INTO pgboss.job (id, name, data) VALUES (gen_random_uuid(), 'hookgate.apply.shop',
         '{"endpoint":"shop","eventIds":["evt_done"]}')`,
    ],
    [
      `INSERT INTO pgboss.job_common (id, name, data) VALUES (gen_random_uuid(), 'hookgate.apply.shop', '{}')`,
    ],
    // A released delivery held again (to be claimed a second time), a held one settled unaudited.
    [`UPDATE hookgate.quarantine SET released_at = NULL, settled_by = NULL WHERE released_at IS NOT NULL`],
    [`UPDATE hookgate.quarantine SET dropped_at = now(), settled_by = 'someone' WHERE released_at IS NULL`],
    // An audit row of another time.
    [
      `INSERT INTO hookgate.audit (at, actor, command, count, dry_run) VALUES (now() - interval '1 year', 'console:x', 'requeue', 1, false)`,
    ],
    // The owner's own functions and records.
    [`SELECT hookgate.inbox_take_move('shop', 'evt_done')`],
    [`INSERT INTO hookgate.inbox_moves (xact) VALUES (pg_current_xact_id())`],
    [`SELECT hookgate.insert_apply_jobs('shop', ARRAY[gen_random_uuid()], ARRAY['["evt_done"]'::jsonb])`],
    [`DELETE FROM hookgate.inbox_keys_floor`],
  ])('is refused: %s', async (statement) => {
    await expect(consoleLogin.query(statement)).rejects.toMatchObject({ code: '42501' });
    expect(await rowsOf('evt_done')).toEqual([{ status: 'processed' }]);
    expect(await jobs()).toEqual([]);
  });

  it("calls the actions' functions with hostile arguments: nothing applied twice, no job but apply jobs for rows that exist", async () => {
    const call = (sql: string, values: unknown[]) => consoleLogin.query(sql, values);
    const requeue = `SELECT * FROM hookgate.requeue_events($1, $2, $3, NULL, NULL, NULL, $4, 100)`;
    // Applied events are not requeued; a limit past the bound is refused.
    await expect(call(requeue, ['shop', ['processed'], null, 10])).rejects.toMatchObject({ code: '22023' });
    await expect(call(requeue, ['shop', ['dead'], null, 1_000_000])).rejects.toMatchObject({ code: '22023' });
    // Rows that do not exist: nothing moved, no job.
    expect((await call(requeue, ['shop', ['dead'], ['evt_missing'], 10])).rows).toEqual([]);
    expect((await call(requeue, ["shop' OR true --", ['dead', 'parked'], null, 10])).rows).toEqual([]);
    // An endpoint without a queue: refused, nothing moved.
    await expect(call(requeue, ['gone', ['dead'], null, 10])).rejects.toMatchObject({ code: 'P0002' });
    expect(
      (await db.pool.query(`SELECT status FROM hookgate.inbox WHERE event_id = 'evt_gone'`)).rows,
    ).toEqual([{ status: 'dead' }]);
    // Discard takes parked and dead rows only.
    await expect(
      call(`SELECT * FROM hookgate.discard_events('shop', $1, NULL, NULL, NULL, NULL, 10, 'x', 'y')`, [
        ['processed'],
      ]),
    ).rejects.toMatchObject({ code: '22023' });
    expect(await jobs()).toEqual([]);

    const release = `SELECT outcome FROM hookgate.release_quarantined($1, 'standard-webhooks', $2, 'order.created',
      NULL, NULL, NULL, '{}', false, $3, 'console:x', NULL)`;
    // A released row, a row that does not exist: nothing claimed.
    expect((await call(release, [released, 'evt_new', false])).rows).toEqual([{ outcome: 'released' }]);
    expect((await call(release, ['999999', 'evt_new', false])).rows).toEqual([{ outcome: 'unknown' }]);
    // A held row released under the id of an event already applied: a duplicate, no second row.
    expect((await call(release, [held, 'evt_done', true])).rows).toEqual([{ outcome: 'duplicate' }]);
    expect(await rowsOf('evt_done')).toEqual([{ status: 'processed' }]);
    // Once released, never again, under any id.
    expect((await call(release, [held, 'evt_other', false])).rows).toEqual([{ outcome: 'released' }]);
    expect(await rowsOf('evt_other')).toEqual([]);
    // The drop of a released row drops nothing.
    expect(
      (await call(`SELECT outcome FROM hookgate.drop_quarantined($1, 'console:x', 'why')`, [[released]]))
        .rows,
    ).toEqual([{ outcome: 'released' }]);
    expect(await jobs()).toEqual([]);

    // The one legitimate requeue: the dead row, under one apply job naming it.
    expect((await call(requeue, ['shop', ['dead'], null, 10])).rows).toEqual([
      { event_id: 'evt_dead', attempts: 8 },
    ]);
    expect(await jobs()).toEqual([{ name: 'hookgate.apply.shop', sound: true }]);
    expect(await rowsOf('evt_done')).toEqual([{ status: 'processed' }]);
  });
});

describe('the key trigger, whoever inserts', () => {
  it('no session setting lets a second row of an applied event in (the runtime role may insert)', async () => {
    for (const setting of [
      `SET hookgate.inbox_moving = 'on'`,
      `SET hookgate.inbox_moving_key = E'shop\\x1fevt_done'`,
    ]) {
      const result = await runtimeLogin.query(`${setting}; ${DUPLICATE_ROW} RETURNING event_id`);
      const inserted = (result as unknown as pg.QueryResult[])[1]!;
      expect(inserted.rowCount).toBe(0);
      await runtimeLogin.query('RESET ALL');
    }
    expect(await rowsOf('evt_done')).toEqual([{ status: 'processed' }]);
  });

  it('a row moved by an UPDATE of received_at keeps its key; a second row in the same transaction does not get in', async () => {
    const client = await runtimeLogin.connect();
    try {
      // Into a week ahead (another partition), back, and a second on (within its partition).
      for (const shift of ['8 days', '-8 days', '1 second']) {
        await client.query('BEGIN');
        const moved = await client.query(
          `UPDATE hookgate.inbox SET received_at = received_at + $1::interval WHERE event_id = 'evt_done'
           RETURNING tableoid::regclass::text AS partition`,
          [shift],
        );
        expect(moved.rowCount).toBe(1);
        const second = await client.query(`${DUPLICATE_ROW} RETURNING event_id`);
        expect(second.rowCount).toBe(0);
        await client.query('COMMIT');
        expect(await rowsOf('evt_done')).toEqual([{ status: 'processed' }]);
      }
    } finally {
      client.release();
    }
    // The moves left no record behind (each was taken by the insert it was for).
    expect((await db.pool.query('SELECT count(*)::int AS n FROM hookgate.inbox_moves')).rows[0].n).toBe(0);
    // And the row is still deduplicated where it now lives.
    expect((await runtimeLogin.query(`${DUPLICATE_ROW} RETURNING event_id`)).rowCount).toBe(0);
  });
});
