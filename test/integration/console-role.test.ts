// The console's database role (services/core/db/roles.ts, docs/console.md), on PostgreSQL 15 and
// 18: a console whose every connection (its pool and its pg-boss) logs in as a member of
// hookgate_console serves every page and performs every action it offers; the same login can
// change no schema, delete nothing and rewrite no payload.
import { createHash, randomBytes } from 'node:crypto';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunningConsole } from '../../services/console/server.ts';
import { parseConfig } from '../../services/core/config/load.ts';
import { createLogger } from '../../services/core/logging.ts';
import { migrate } from '../../services/core/migrate/migrate.ts';
import { createBoss } from '../../services/core/queue/boss.ts';
import { ensureQueues } from '../../services/core/queue/queues.ts';
import { startRuntime } from '../../services/runtime/runtime.ts';
import { createTestDatabase, type TestDatabase } from '../support/database.ts';
import { workerConfigDocument } from '../support/worker-harness.ts';

const PASSWORD = 'not-a-secret-test-only';
const TOKEN = randomBytes(24).toString('hex');
let db: TestDatabase;
let consoleUrl: string;
let consolePool: pg.Pool;
let running: RunningConsole;
let runtime: Awaited<ReturnType<typeof startRuntime>>;
let quarantined: string[];

beforeAll(async () => {
  db = await createTestDatabase({ migrated: false });
  const client = new pg.Client({ connectionString: db.url });
  await client.connect();
  expect((await migrate(client, db.url, { createRoles: true })).roles).toBe(true);
  await client.end();
  const name = `hgconsole_${randomBytes(4).toString('hex')}`;
  await db.pool.query(`CREATE ROLE ${name} LOGIN PASSWORD '${PASSWORD}' IN ROLE hookgate_console`);
  const url = new URL(db.url);
  url.username = name;
  url.password = PASSWORD;
  consoleUrl = url.toString();
  consolePool = new pg.Pool({ connectionString: consoleUrl, max: 1 });
  consolePool.on('error', () => {});

  const insert = `INSERT INTO hookgate.inbox (endpoint, event_id, provider, event_type, payload, status, attempts)
    VALUES ('shop', $1, 'standard-webhooks', 'job.run', '{"data":{}}', 'dead', 1)`;
  await db.pool.query(insert, ['evt_requeue']);
  await db.pool.query(insert, ['evt_discard']);
  await db.pool.query(
    `INSERT INTO hookgate.destination_deliveries (endpoint, destination, event_id, event_type, webhook_id, status, attempts, settled_at)
     VALUES ('shop', 'ledger', 'evt_requeue', 'job.run', 'msg_role_test', 'dead', 1, now())`,
  );
  quarantined = (
    await db.pool.query<{ id: string }>(
      `INSERT INTO hookgate.quarantine (endpoint, reason, message, body, headers, body_digest)
       SELECT 'shop', 'event_type_missing', 'no type', convert_to(b, 'UTF8'),
              jsonb_build_object('webhook-id', i, 'webhook-timestamp', '1700000000'), sha256(convert_to(b, 'UTF8'))
         FROM (VALUES ('evt_q_release', '{"kind":"order.created"}'), ('evt_q_drop', '{"other":1}')) AS v(i, b)
       RETURNING id::text AS id`,
    )
  ).rows.map((row) => row.id);

  const config = parseConfig(
    {
      ...workerConfigDocument({
        shop: {
          handler: 'record',
          extract: { eventType: '/kind' },
          destinations: { ledger: { url: 'http://127.0.0.1:9/ledger' } },
          // The payload search's statement through the payload index, and the release's mark.
          payloadSearch: true,
        },
      }),
      console: {
        sessionSecret: 'console-role-test-session-secret-0123456789',
        tokens: [{ name: 'ops', sha256: createHash('sha256').update(TOKEN).digest('hex') }],
        port: 0,
      },
    },
    {},
  );
  // The gateways and workers (the runtime role) have created the queues; the console only sends.
  const owner = createBoss({ connectionString: db.url, max: 1, supervise: false, applicationName: 'owner' });
  owner.on('error', () => {});
  await owner.start();
  await ensureQueues(owner, ['shop']);
  await owner.stop({ graceful: false });
  runtime = await startRuntime({
    config,
    role: 'console',
    console: true,
    databaseUrl: consoleUrl,
    databaseHost: 'the test database',
    databaseAddress: 'the test database',
    logger: createLogger('warn', 2),
    configDir: process.cwd(),
    port: 0,
    host: '127.0.0.1',
    metricsPort: 0,
    metricsHost: '127.0.0.1',
  });
  running = runtime.console!;
});

afterAll(async () => {
  await runtime?.stop();
  await consolePool?.end();
  await db?.drop();
});

const auth = () => ({ authorization: `Bearer ${TOKEN}` });

async function get(path: string): Promise<string> {
  const reply = await fetch(new URL(path, running.url), { headers: auth() });
  const text = await reply.text();
  expect(reply.status, `${path}: ${text.slice(0, 400)}`).toBe(200);
  return text;
}

async function act(action: string, fields: Record<string, string>): Promise<string> {
  for (const suffix of ['/preview', '']) {
    const reply = await fetch(new URL(`/actions/${action}${suffix}`, running.url), {
      method: 'POST',
      headers: { ...auth(), 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams(fields).toString(),
    });
    const text = await reply.text();
    expect(reply.status, `${action}${suffix}: ${text.slice(0, 600)}`).toBe(200);
    if (suffix === '') return text;
  }
  return '';
}

describe('a console logged in as a member of hookgate_console', () => {
  it('serves every page', async () => {
    await get('/');
    expect(await get('/events?endpoint=shop&status=dead')).toContain('evt_requeue');
    expect(await get('/events?contains=%7B%22data%22%3A%7B%7D%7D')).toContain('by payload containment');
    await get('/events/shop/evt_requeue');
    expect(await get('/quarantine')).toContain('event_type_missing');
    await get(`/quarantine/${quarantined[0]}`);
    await get('/audit?since=1h');
    expect(await get('/destinations')).toContain('ledger');
  });

  it('performs every action: requeue, discard, pause, resume, quarantine release and drop, destination pause, resume and redeliver', async () => {
    expect(await act('requeue', { endpoint: 'shop', event_id: 'evt_requeue', status: 'dead' })).not.toContain(
      'class="error"',
    );
    expect(await act('discard', { endpoint: 'shop', event_id: 'evt_discard', reason: 'test' })).toContain(
      'Discarded 1 event(s)',
    );
    await act('pause', { endpoint: 'shop', reason: 'role test' });
    await act('resume', { endpoint: 'shop' });
    expect(await act('quarantine-release', { id: quarantined[0]! })).toContain(
      'claimed into the inbox (accepted)',
    );
    const released = await db.pool.query<{ payload_search: boolean | null }>(
      `SELECT payload_search FROM hookgate.inbox WHERE endpoint = 'shop' AND event_id = 'evt_q_release'`,
    );
    expect(released.rows).toEqual([{ payload_search: true }]);
    expect(await act('quarantine-drop', { id: quarantined[1]!, reason: 'role test' })).toContain(
      'Dropped delivery',
    );
    await act('destination-pause', { endpoint: 'shop', destination: 'ledger' });
    await act('destination-resume', { endpoint: 'shop', destination: 'ledger' });
    const delivery = await db.pool.query<{ id: string }>(
      `SELECT id::text AS id FROM hookgate.destination_deliveries WHERE webhook_id = 'msg_role_test'`,
    );
    expect(
      await act('redeliver', { endpoint: 'shop', destination: 'ledger', delivery_id: delivery.rows[0]!.id }),
    ).toContain('Redelivering 1 delivery of shop/ledger');
    const redelivered = await db.pool.query(
      `SELECT status, redelivered_attempts FROM hookgate.destination_deliveries WHERE webhook_id = 'msg_role_test'`,
    );
    expect(redelivered.rows).toEqual([{ status: 'pending', redelivered_attempts: 1 }]);
    const { rows } = await db.pool.query(
      `SELECT event_id, status FROM hookgate.inbox WHERE endpoint = 'shop' ORDER BY event_id`,
    );
    expect(rows).toEqual([
      { event_id: 'evt_discard', status: 'discarded' },
      { event_id: 'evt_q_release', status: 'pending' },
      { event_id: 'evt_requeue', status: 'pending' },
    ]);
    const audit = await db.pool.query(
      `SELECT DISTINCT command FROM hookgate.audit WHERE actor = 'console:ops' ORDER BY 1`,
    );
    expect(audit.rows.map((row) => row.command)).toEqual([
      'destination pause',
      'destination resume',
      'discard',
      'pause',
      'quarantine drop',
      'quarantine release',
      'redeliver',
      'requeue',
      'resume',
    ]);
  });

  it('serves the management API: its reads, an action with its Idempotency-Key, the token’s last use', async () => {
    const api = (path: string, init: RequestInit = {}) =>
      fetch(new URL(`/api/v1${path}`, running.url), { ...init, headers: { ...auth(), ...init.headers } });
    for (const path of [
      '/endpoints',
      '/stats',
      '/events?status=discarded',
      '/destinations',
      '/quarantine',
      '/audit',
      '/tokens',
    ])
      expect([path, (await api(path)).status]).toEqual([path, 200]);
    const key = { 'idempotency-key': 'console-role-key' };
    const paused = await api('/endpoints/shop/pause', { method: 'POST', headers: key });
    expect(paused.status).toBe(200);
    const again = await api('/endpoints/shop/pause', { method: 'POST', headers: key });
    expect([again.status, again.headers.get('idempotent-replayed')]).toEqual([200, 'true']);
    expect(
      (await api('/endpoints/shop/resume', { method: 'POST', headers: { 'idempotency-key': 'k2' } })).status,
    ).toBe(200);
    // Written beside the requests, not in their way: polled for.
    let used: unknown[] = [];
    for (let n = 0; n < 100 && used.length === 0; n += 1) {
      used = (await db.pool.query(`SELECT token FROM hookgate.api_token_use`)).rows;
      if (used.length === 0) await new Promise((resolve) => setTimeout(resolve, 50));
    }
    expect(used).toEqual([{ token: 'ops' }]);
  });

  it.each([
    ['DROP TABLE hookgate.inbox'],
    ['ALTER TABLE hookgate.inbox ADD COLUMN extra integer'],
    ['TRUNCATE hookgate.inbox'],
    ['TRUNCATE hookgate.audit'],
    ['CREATE TABLE hookgate.extra (id integer)'],
    ['CREATE TABLE public.extra (id integer)'],
    ['DROP TABLE pgboss.job'],
    [`DELETE FROM hookgate.inbox WHERE event_id = 'evt_requeue'`],
    [`DELETE FROM hookgate.audit`],
    [`DELETE FROM hookgate.quarantine`],
    [`UPDATE hookgate.inbox SET payload = '{"forged":true}' WHERE event_id = 'evt_requeue'`],
    [`UPDATE hookgate.inbox SET event_type = 'forged' WHERE event_id = 'evt_requeue'`],
    [`UPDATE hookgate.quarantine SET body = '\\x00'`],
    [`UPDATE hookgate.audit SET actor = 'someone else'`],
    [`UPDATE hookgate.destination_deliveries SET webhook_id = 'forged'`],
    [`DELETE FROM hookgate.destination_deliveries`],
    ['SELECT count(*) FROM billing.ledger_entries'],
  ])('cannot %s', async (statement) => {
    await expect(consolePool.query(statement)).rejects.toMatchObject({ code: '42501' });
  });
});
