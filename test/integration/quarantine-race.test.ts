// A quarantine release racing a drop of the same row (services/core/quarantine/actions.ts), on
// PostgreSQL 18 and 15: exactly one of the two wins, and the other says who settled the row and
// when. Deterministic: a third session holds the first action's transaction open with a lock it
// needs further on (the audit table for a drop, the event's key for a release); the second action
// starts once the first is seen waiting there, and the lock is let go once the second is seen
// waiting (or done).
import pg from 'pg';
import type { PgBoss } from 'pg-boss';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseConfig } from '../../services/core/config/load.ts';
import { dropQuarantined, releaseQuarantined } from '../../services/core/quarantine/actions.ts';
import { createBoss } from '../../services/core/queue/boss.ts';
import { ensureQueues } from '../../services/core/queue/queues.ts';
import { runCliInProcess } from '../support/cli.ts';
import { createTestDatabase, type TestDatabase } from '../support/database.ts';
import { waitFor, workerConfigDocument, writeConfigFile } from '../support/worker-harness.ts';

let db: TestDatabase;
let boss: PgBoss;
let releasing: pg.Pool;
let dropping: pg.Pool;
let holder: pg.Client;
let configFile: string;

const document = workerConfigDocument({ shop: { handler: 'record', extract: { eventType: '/kind' } } });
const config = parseConfig(document, {});

beforeAll(async () => {
  db = await createTestDatabase();
  boss = createBoss({ connectionString: db.url, max: 1, supervise: false, applicationName: 'race-queues' });
  boss.on('error', () => {});
  await boss.start();
  await ensureQueues(boss, ['shop']);
  const pool = (name: string) => {
    const made = new pg.Pool({ connectionString: db.url, max: 2, application_name: name });
    made.on('error', () => {});
    return made;
  };
  releasing = pool('race-release');
  dropping = pool('race-drop');
  holder = new pg.Client({ connectionString: db.url, application_name: 'race-holder' });
  await holder.connect();
  configFile = writeConfigFile(document);
});

afterAll(async () => {
  await holder?.end();
  await releasing?.end();
  await dropping?.end();
  await boss?.stop({ graceful: false, close: true });
  await db?.drop();
});

/** A held delivery whose event id is `eventId` (a type the config's pointer now finds). */
async function held(eventId: string): Promise<string> {
  const body = JSON.stringify({ kind: 'order.created', n: eventId });
  const { rows } = await db.pool.query<{ id: string }>(
    `INSERT INTO hookgate.quarantine (endpoint, reason, message, body, headers, body_digest)
     VALUES ('shop', 'event_type_missing', 'no type', convert_to($1, 'UTF8'),
             jsonb_build_object('webhook-id', $2::text, 'webhook-timestamp', '1700000000'),
             sha256(convert_to($1, 'UTF8')))
     RETURNING id::text AS id`,
    [body, eventId],
  );
  return rows[0]!.id;
}

/** Whether a session of this pool is waiting for a lock now. */
async function waitingForLock(application: string): Promise<boolean> {
  const { rows } = await db.pool.query(
    `SELECT 1 FROM pg_stat_activity WHERE application_name = $1 AND wait_event_type = 'Lock'`,
    [application],
  );
  return rows.length > 0;
}

/** Resolves once the action is waiting for a lock, or has ended (whichever comes first). */
async function blockedOrDone(action: Promise<unknown>, application: string): Promise<void> {
  let done = false;
  void action.then(
    () => {
      done = true;
    },
    () => {
      done = true;
    },
  );
  await waitFor(`${application} waiting or done`, async () => done || (await waitingForLock(application)));
}

async function state(id: string, eventId: string) {
  const row = (
    await db.pool.query(
      `SELECT released_at IS NOT NULL AS released, dropped_at IS NOT NULL AS dropped FROM hookgate.quarantine WHERE id = $1`,
      [id],
    )
  ).rows[0];
  const inbox = (
    await db.pool.query(
      `SELECT count(*)::int AS n FROM hookgate.inbox WHERE endpoint = 'shop' AND event_id = $1`,
      [eventId],
    )
  ).rows[0].n;
  const jobs = (
    await db.pool.query(
      `SELECT count(*)::int AS n FROM pgboss.job WHERE name = 'hookgate.apply.shop' AND data->'eventIds' ? $1`,
      [eventId],
    )
  ).rows[0].n;
  return { ...row, inbox, jobs };
}

describe('a quarantine release and a drop of the same row, at the same time', () => {
  it('the drop first: the release waits for the row, then finds it dropped and claims nothing', async () => {
    const id = await held('evt_race_drop');
    await holder.query('BEGIN');
    // The drop updates the row, then waits here to write its audit row, holding the row's lock.
    await holder.query('LOCK TABLE hookgate.audit IN SHARE MODE');
    const drop = dropQuarantined(dropping, { ids: [id], actor: 'alice', reason: 'junk' });
    await blockedOrDone(drop, 'race-drop');
    const release = releaseQuarantined(releasing, config, { ids: [id], actor: 'bob' });
    await blockedOrDone(release, 'race-release');
    await holder.query('ROLLBACK');
    const [dropped, released] = await Promise.all([drop, release]);
    expect(dropped).toEqual({ dropped: [id], notDropped: [] });
    expect(released).toEqual([
      {
        id,
        outcome: 'not_held',
        reason: 'quarantine_settled',
        message: expect.stringMatching(
          new RegExp(`^Quarantined delivery ${id} was dropped by alice at .*: nothing was released\\.$`),
        ),
      },
    ]);
    expect(await state(id, 'evt_race_drop')).toEqual({ released: false, dropped: true, inbox: 0, jobs: 0 });
    // The command says so too, with its code (exit 2: nothing to do).
    const cli = await runCliInProcess(['quarantine', 'release', id, '--config', configFile], {
      DATABASE_URL: db.url,
      HOOKGATE_CONFIG: undefined,
    });
    expect(cli.code, cli.output).toBe(2);
    expect(cli.output).toMatch(
      new RegExp(`quarantine_settled: Quarantined delivery ${id} was dropped by alice`),
    );
  });

  it('the release first: the drop waits for the row, then finds it released and drops nothing', async () => {
    const id = await held('evt_race_release');
    await holder.query('BEGIN');
    // The release claims the event with the row locked, and waits here on the event's key.
    await holder.query(
      `INSERT INTO hookgate.inbox_keys (endpoint, event_id, received_at) VALUES ('shop', 'evt_race_release', now())`,
    );
    const release = releaseQuarantined(releasing, config, { ids: [id], actor: 'bob' });
    await blockedOrDone(release, 'race-release');
    const drop = dropQuarantined(dropping, { ids: [id], actor: 'alice', reason: 'junk' });
    await blockedOrDone(drop, 'race-drop');
    await holder.query('ROLLBACK');
    const [released, dropped] = await Promise.all([release, drop]);
    expect(released).toEqual([{ id, outcome: 'accepted', eventId: 'evt_race_release' }]);
    expect(dropped).toEqual({
      dropped: [],
      notDropped: [
        {
          id,
          code: 'quarantine_settled',
          message: expect.stringMatching(
            new RegExp(`^Quarantined delivery ${id} was released by bob at .*: nothing was dropped\\.$`),
          ),
        },
      ],
    });
    expect(await state(id, 'evt_race_release')).toEqual({
      released: true,
      dropped: false,
      inbox: 1,
      jobs: 1,
    });
    const cli = await runCliInProcess(
      ['quarantine', 'drop', id, '--reason', 'late', '--config', configFile],
      {
        DATABASE_URL: db.url,
        HOOKGATE_CONFIG: undefined,
      },
    );
    expect(cli.code, cli.output).toBe(2);
    expect(cli.output).toMatch(
      new RegExp(`quarantine_settled: Quarantined delivery ${id} was released by bob`),
    );
  });
});
