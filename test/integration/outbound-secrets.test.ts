import { randomBytes } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseConfig } from '../../services/core/config/load.ts';
import type { Config } from '../../services/core/config/schema.ts';
import { insertDeliveries } from '../../services/core/destinations/deliveries.ts';
import { webhookIdFor } from '../../services/core/destinations/routes.ts';
import { migrate } from '../../services/core/migrate/migrate.ts';
import { createBoss } from '../../services/core/queue/boss.ts';
import { createTestDatabase, type TestDatabase } from '../support/database.ts';
import { post, standardWebhook } from '../support/deliveries.ts';
import {
  type DownstreamRequest,
  type FakeDownstream,
  startFakeDownstream,
} from '../support/fake-downstream.ts';
import { startTestGateway, type TestGateway } from '../support/gateway.ts';
import {
  Claimer,
  spawnWorkerProcess,
  type WorkerProcess,
  waitFor,
  workerConfigDocument,
  writeConfigFile,
} from '../support/worker-harness.ts';

// Nothing queued or stored names a secret or a URL to be resolved later. The worker (a real
// `serve --role worker` process, its environment holding the database URL and the secrets its
// configuration names) is handed, before it starts, everything the console's database role (and
// whoever can write the tables) could leave for it: pg-boss jobs in every queue the removed
// outbox relay consumed, each with a URL that names `${DATABASE_URL}` and the other secrets;
// delivery rows whose names and ids are such references, and one naming a destination the
// configuration does not have. A module handler copies signed payload text into the one outbound
// call handlers have (route()). A real receiver records every request it gets: none carries a
// secret or the database URL, the rows the configuration cannot send are dead with a sentence,
// and the text is sent, where it is sent at all, as text.

const SECRETS = {
  SW_SECRET: `whsec_${randomBytes(24).toString('base64')}`,
  CONSOLE_SESSION_SECRET: `session-${randomBytes(24).toString('hex')}`,
  PARTNER_TOKEN: `partner-${randomBytes(16).toString('hex')}`,
};
/** What the relay once resolved from its environment when it sent. */
const REFERENCES = '${DATABASE_URL}&s=${SW_SECRET}&sess=${CONSOLE_SESSION_SECRET}&p=${PARTNER_TOKEN}';
/** Every queue the outbox relay consumed or dead-lettered into. */
const RELAY_QUEUES = [
  'hookgate.outbox.forward',
  'hookgate.outbox.notify',
  'hookgate.outbox.forward.dead',
  'hookgate.outbox.notify.dead',
];
const PASSWORD = 'not-a-secret-test-only';

let db: TestDatabase;
let receiver: FakeDownstream;
let gateway: TestGateway;
let claimer: Claimer;
let worker: WorkerProcess | undefined;
let config: Config;
let consolePool: pg.Pool;
/** Whether the console's role could insert the jobs itself (another layer may refuse it). */
const consoleInserted: Record<string, boolean> = {};

function document(url: string): Record<string, unknown> {
  const endpoint = { secrets: ['${SW_SECRET}'] };
  return workerConfigDocument({
    orders: { ...endpoint, handler: 'record', destinations: { ledger: { url: `${url}/ledger` } } },
    routed: {
      ...endpoint,
      handler: 'module:./copy-route.ts',
      destinations: { partner: { url: `${url}/partner`, routedBy: 'handler' } },
    },
  });
}

/** Every request the receiver got, as one text: path, headers and body. */
const everything = (requests: readonly DownstreamRequest[]) =>
  requests.map((r) => `${r.path}\n${JSON.stringify(r.headers)}\n${r.body}`).join('\n');

function secretValues(): string[] {
  const values = [db.url, ...Object.values(SECRETS)];
  return [...new Set(values.flatMap((value) => [value, encodeURIComponent(value), encodeURI(value)]))];
}

async function deliveryRows(endpoint: string) {
  const { rows } = await db.pool.query<{
    destination: string;
    event_id: string;
    status: string;
    attempts: number;
    last_error: string | null;
  }>(
    `SELECT destination, event_id, status, attempts, last_error FROM hookgate.destination_deliveries
      WHERE endpoint = $1 ORDER BY destination, event_id`,
    [endpoint],
  );
  return rows;
}

beforeAll(async () => {
  db = await createTestDatabase({ migrated: false });
  const admin = new pg.Client({ connectionString: db.url });
  await admin.connect();
  expect((await migrate(admin, db.url, { createRoles: true })).roles).toBe(true);
  await admin.end();
  const login = `hgconsole_${randomBytes(4).toString('hex')}`;
  await db.pool.query(`CREATE ROLE ${login} LOGIN PASSWORD '${PASSWORD}' IN ROLE hookgate_console`);
  const consoleUrl = new URL(db.url);
  consoleUrl.username = login;
  consoleUrl.password = PASSWORD;
  consolePool = new pg.Pool({ connectionString: consoleUrl.toString(), max: 1 });
  consolePool.on('error', () => {});

  receiver = await startFakeDownstream();
  const written = document(receiver.url);
  config = parseConfig(written, SECRETS);
  const configFile = writeConfigFile(written);
  writeFileSync(
    join(dirname(configFile), 'copy-route.ts'),
    // Copies the signed payload's `to` into route(): whatever the sender wrote there.
    `export const handler = {
       name: 'copy-route',
       async apply({ route }, event) {
         route(event, String(event.payload?.data?.to));
       },
     };`,
  );
  gateway = await startTestGateway(db.url, config);
  claimer = await Claimer.start(db.url, config);

  // A database that still has the relay's queues (made before they were removed): as its owner.
  const owner = createBoss({ connectionString: db.url, max: 1, supervise: false, applicationName: 'owner' });
  owner.on('error', () => {});
  await owner.start();
  for (const queue of RELAY_QUEUES.filter((name) => name.endsWith('.dead'))) await owner.createQueue(queue);
  for (const queue of RELAY_QUEUES.filter((name) => !name.endsWith('.dead')))
    await owner.createQueue(queue, { deadLetter: `${queue}.dead` });
  await owner.stop({ graceful: false });

  // The jobs the relay would have sent from, written as the console's role where it may.
  for (const queue of RELAY_QUEUES) {
    const kind = queue.split('.')[2]!;
    const data = {
      v: 1,
      kind,
      key: `steal:${queue}`,
      endpoint: 'orders',
      eventId: 'evt_steal',
      payload: {
        url: `${receiver.url}/x?db=${REFERENCES}`,
        idempotencyKey: `steal:${queue}`,
        body: { db: '${DATABASE_URL}', secret: '${SW_SECRET}' },
      },
    };
    const insert = `INSERT INTO pgboss.job (id, name, data) VALUES (gen_random_uuid(), $1, $2)`;
    try {
      await consolePool.query(insert, [queue, data]);
      consoleInserted[queue] = true;
    } catch (error) {
      // Refused to the console's role (42501): its owner writes it, so the worker is still tried.
      expect((error as { code?: string }).code).toBe('42501');
      consoleInserted[queue] = false;
      await db.pool.query(insert, [queue, data]);
    }
  }

  // Delivery rows whose text is references, one naming a destination the configuration lacks,
  // one naming a configured destination; the console's role then redelivers (sets pending) them.
  await db.pool.query(
    `INSERT INTO hookgate.inbox (endpoint, event_id, provider, event_type, payload, status, attempts)
     VALUES ('orders', '\${DATABASE_URL}', 'standard-webhooks', '\${SW_SECRET}', $1, 'processed', 1)`,
    [{ db: '${DATABASE_URL}', sess: '${CONSOLE_SESSION_SECRET}' }],
  );
  const row = (destination: string, eventId: string) => ({
    destination,
    eventId,
    eventType: '${SW_SECRET}',
    webhookId: webhookIdFor('orders', eventId, destination),
    entityKey: null,
    entityVersion: null,
  });
  await insertDeliveries(db.pool, 'orders', [
    row('${DATABASE_URL}', 'evt_unknown'),
    row(`${receiver.url}/x?db=${REFERENCES}`, 'evt_url_named'),
    row('ledger', '${DATABASE_URL}'),
  ]);
  await db.pool.query(`UPDATE hookgate.destination_deliveries SET status = 'dead', settled_at = now()`);
  await consolePool.query(
    `UPDATE hookgate.destination_deliveries SET status = 'pending', next_attempt_at = now(), settled_at = NULL`,
  );

  worker = spawnWorkerProcess(configFile, db.url, SECRETS);
}, 120_000);

afterAll(async () => {
  if (worker && worker.child.exitCode === null) {
    worker.child.kill('SIGTERM');
    await worker.exited;
  }
  await claimer?.stop();
  await gateway?.stop();
  await consolePool?.end();
  await receiver?.close();
  await db?.drop();
});

describe('nothing stored or queued makes the worker send a secret', () => {
  it("the relay's queues are left alone, rows naming no configured destination end dead, text is sent as text", async () => {
    // A sentinel through the worker's whole path: once it is delivered, the worker has started,
    // swept and sent what it would send.
    const sentinel = standardWebhook(SECRETS.SW_SECRET, { eventId: 'evt_sentinel', data: { ok: true } });
    expect((await post(`${gateway.url}/webhooks/orders`, sentinel)).status).toBe(200);
    await waitFor(
      'the sentinel delivered',
      async () => {
        const rows = await deliveryRows('orders');
        return rows.find((r) => r.event_id === 'evt_sentinel')?.status === 'delivered' &&
          rows.every((r) => r.status === 'delivered' || r.status === 'dead')
          ? rows
          : null;
      },
      45_000,
    );
    const rows = await deliveryRows('orders');
    const unknown = rows.find((r) => r.event_id === 'evt_unknown');
    expect(unknown).toMatchObject({ status: 'dead', attempts: 0 });
    expect(unknown?.last_error).toBe(
      'destination_unconfigured: the configuration has no destination ${DATABASE_URL} on endpoint orders, so nothing was sent; put the destination back and redeliver (hookgate redeliver --destination ${DATABASE_URL}) to send it',
    );
    const urlNamed = rows.find((r) => r.event_id === 'evt_url_named');
    expect(urlNamed).toMatchObject({ status: 'dead', attempts: 0 });
    expect(urlNamed?.last_error).toMatch(
      /^destination_unconfigured: the configuration has no destination http:/,
    );
    // The configured destination sent its row, references and all, as text.
    expect(rows.find((r) => r.event_id === '${DATABASE_URL}')).toMatchObject({
      destination: 'ledger',
      status: 'delivered',
      attempts: 1,
    });
    const ledger = receiver.requests.filter((r) => r.path === '/ledger');
    const literal = ledger.find((r) => r.headers['x-hookgate-event-id'] === '${DATABASE_URL}');
    expect(literal?.headers['x-hookgate-event-type']).toBe('${SW_SECRET}');
    expect(JSON.parse(literal!.body)).toEqual({ db: '${DATABASE_URL}', sess: '${CONSOLE_SESSION_SECRET}' });

    // Nothing took the relay's jobs: each waits as it was written, and nobody asked for /x.
    const { rows: jobs } = await db.pool.query<{ name: string; state: string; retry_count: number }>(
      `SELECT name, state::text AS state, retry_count FROM pgboss.job
        WHERE name LIKE 'hookgate.outbox.%' ORDER BY name`,
    );
    expect(jobs).toEqual(
      [...RELAY_QUEUES].sort().map((name) => ({ name, state: 'created', retry_count: 0 })),
    );
    expect(receiver.requests.filter((r) => r.path === '/x')).toEqual([]);
    for (const value of secretValues()) expect(everything(receiver.requests)).not.toContain(value);
    // What the console's role could do here, for the record of this run (another layer may refuse it).
    expect(Object.keys(consoleInserted).sort()).toEqual([...RELAY_QUEUES].sort());
  });

  it("a module handler routing by the payload's text: a configured name is sent, anything else fails the event", async () => {
    const send = async (eventId: string, to: string) => {
      const delivery = standardWebhook(SECRETS.SW_SECRET, { eventId, data: { to, db: '${DATABASE_URL}' } });
      expect((await post(`${gateway.url}/webhooks/routed`, delivery)).status).toBe(200);
    };
    await send('evt_partner', 'partner');
    await send('evt_url', `${receiver.url}/x?db=${REFERENCES}`);
    await send('evt_reference', '${DATABASE_URL}');
    await send('evt_secret_name', SECRETS.PARTNER_TOKEN);
    const settled = await waitFor(
      'the routed events settled',
      async () => {
        const { rows } = await db.pool.query<{ event_id: string; status: string; last_error: string | null }>(
          `SELECT event_id, status, last_error FROM hookgate.inbox WHERE endpoint = 'routed' ORDER BY event_id`,
        );
        return rows.length === 4 && rows.every((row) => row.status !== 'pending') ? rows : null;
      },
      45_000,
    );
    const byId = Object.fromEntries(settled.map((row) => [row.event_id, row]));
    expect(byId.evt_partner?.status).toBe('processed');
    for (const id of ['evt_url', 'evt_reference', 'evt_secret_name']) {
      expect(byId[id]?.status, id).toBe('dead');
      expect(byId[id]?.last_error, id).toMatch(
        /^route_destination_unknown: the handler routed the event to destination ".*", which endpoint routed does not have; a handler routes only to the endpoint's destinations with routedBy: handler, and they are partner$/,
      );
    }
    const partner = await waitFor('the routed event delivered', async () => {
      const rows = await deliveryRows('routed');
      return rows.length === 1 && rows[0]!.status === 'delivered' ? rows : null;
    });
    expect(partner.map((r) => [r.destination, r.event_id])).toEqual([['partner', 'evt_partner']]);
    const sent = receiver.requests.filter((r) => r.path === '/partner');
    expect(sent).toHaveLength(1);
    expect(JSON.parse(sent[0]!.body)).toMatchObject({ data: { to: 'partner', db: '${DATABASE_URL}' } });
    expect(receiver.requests.filter((r) => r.path === '/x')).toEqual([]);
    for (const value of secretValues()) expect(everything(receiver.requests)).not.toContain(value);
  });
});
