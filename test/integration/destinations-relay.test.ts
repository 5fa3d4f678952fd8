import { Webhook } from 'standardwebhooks';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { routesFrom } from '../../services/core/destinations/routes.ts';
import { createLogger } from '../../services/core/logging.ts';
import { type RunningDestinationRelay, startDestinationRelay } from '../../services/worker/destinations.ts';
import { runCliInProcess } from '../support/cli.ts';
import { createTestDatabase, type TestDatabase } from '../support/database.ts';
import { type FakeDownstream, startFakeDownstream } from '../support/fake-downstream.ts';
import {
  Claimer,
  startTestWorker,
  type TestWorker,
  waitFor,
  workerConfig,
  workerConfigDocument,
  writeConfigFile,
} from '../support/worker-harness.ts';

// Fan-out end to end in one process: events claimed as the gateway claims them, applied by the
// real worker (which writes the deliveries in the apply's transaction), sent by the destination
// relay to a real local HTTP server.

const SIGNING_SECRET = `whsec_${Buffer.from('a destination signing secret, 32b').toString('base64')}`;
// A destination's secrets are references in the configuration (literals are refused at load).
const SECRETS_ENV = { EU_SIGNING_SECRET: SIGNING_SECRET, EU_TOKEN: 'eu-token' };
const FAST_RETRY = { limit: 3, backoff: '100ms', max: '100ms', jitter: 0 };

let db: TestDatabase;
let downstream: FakeDownstream;
let claimer: Claimer;
let worker: TestWorker;
let relay: RunningDestinationRelay;
let configFile: string;

async function deliveries() {
  const { rows } = await db.pool.query<{
    destination: string;
    event_id: string;
    status: string;
    attempts: number;
    webhook_id: string;
  }>(
    `SELECT destination, event_id, status, attempts, webhook_id
       FROM hookgate.destination_deliveries ORDER BY destination, event_id`,
  );
  return rows;
}

beforeAll(async () => {
  db = await createTestDatabase();
  downstream = await startFakeDownstream();
  const endpoints = {
    pay: {
      handler: 'record',
      destinations: {
        eu: {
          url: `${downstream.url}/eu`,
          filter: { types: ['invoice.*'], where: [{ pointer: '/data/currency', in: ['eur', 'gbp'] }] },
          signing: { secrets: ['${EU_SIGNING_SECRET}'] },
          headers: { Authorization: 'Bearer ${EU_TOKEN}' },
          retry: FAST_RETRY,
        },
        all: { url: `${downstream.url}/all`, retry: FAST_RETRY },
        never: { url: `${downstream.url}/never`, filter: { types: ['nothing.*'] }, retry: FAST_RETRY },
      },
    },
  };
  const config = workerConfig(endpoints, {}, SECRETS_ENV);
  configFile = writeConfigFile(workerConfigDocument(endpoints));
  claimer = await Claimer.start(db.url, config);
  worker = await startTestWorker(db.url, config);
  relay = startDestinationRelay({
    pool: worker.pool,
    routes: routesFrom(config),
    logger: createLogger('silent'),
    pollIntervalMs: 50,
  });
});

afterAll(async () => {
  await relay?.stop();
  await worker?.stop();
  await claimer?.stop();
  await downstream?.close();
  await db?.drop();
});

describe('destinations', () => {
  it('route by filter exactly, sign verifiably, and retry a failing destination until it delivers once', async () => {
    // The first request to /all fails; the relay tries again after its backoff.
    downstream.script('/all', [500]);
    await claimer.claim('pay', [
      { eventId: 'evt_eur', eventType: 'invoice.paid', body: { id: 'evt_eur', data: { currency: 'eur' } } },
      { eventId: 'evt_usd', eventType: 'invoice.paid', body: { id: 'evt_usd', data: { currency: 'usd' } } },
      {
        eventId: 'evt_cust',
        eventType: 'customer.created',
        body: { id: 'evt_cust', data: { currency: 'eur' } },
      },
    ]);
    const settled = await waitFor('every delivery to be delivered', async () => {
      const rows = await deliveries();
      return rows.length === 4 && rows.every((row) => row.status === 'delivered') ? rows : null;
    });
    // Only matching destinations got a row: `never` none, `eu` the eur invoice alone.
    expect(settled.map((row) => [row.destination, row.event_id])).toEqual([
      ['all', 'evt_cust'],
      ['all', 'evt_eur'],
      ['all', 'evt_usd'],
      ['eu', 'evt_eur'],
    ]);
    expect(downstream.requests.filter((r) => r.path === '/never')).toEqual([]);

    const eu = downstream.requests.filter((r) => r.path === '/eu');
    expect(eu).toHaveLength(1);
    const [request] = eu;
    expect(JSON.parse(request!.body)).toEqual({ id: 'evt_eur', data: { currency: 'eur' } });
    expect(request!.headers.authorization).toBe('Bearer eu-token');
    expect(request!.headers['idempotency-key']).toBe(request!.headers['webhook-id']);
    // The receiver's own check, with the Standard Webhooks SDK.
    const verified = new Webhook(SIGNING_SECRET).verify(request!.body, {
      'webhook-id': String(request!.headers['webhook-id']),
      'webhook-timestamp': String(request!.headers['webhook-timestamp']),
      'webhook-signature': String(request!.headers['webhook-signature']),
    });
    expect(verified).toEqual({ id: 'evt_eur', data: { currency: 'eur' } });
    expect(() =>
      new Webhook(SIGNING_SECRET).verify(`${request!.body} `, {
        'webhook-id': String(request!.headers['webhook-id']),
        'webhook-timestamp': String(request!.headers['webhook-timestamp']),
        'webhook-signature': String(request!.headers['webhook-signature']),
      }),
    ).toThrow();

    // `all`: four requests for three events; the one that got the 500 was sent twice with the
    // same webhook-id, and each event is delivered (answered 2xx) once.
    const all = downstream.requests.filter((r) => r.path === '/all');
    expect(all).toHaveLength(4);
    const byId = new Map<string, number>();
    for (const r of all)
      byId.set(String(r.headers['webhook-id']), (byId.get(String(r.headers['webhook-id'])) ?? 0) + 1);
    expect([...byId.values()].sort()).toEqual([1, 1, 2]);
    const retried = settled.find((row) => row.destination === 'all' && row.attempts === 2);
    expect(retried).toBeDefined();
    expect(byId.get(retried!.webhook_id)).toBe(2);
    expect(
      settled
        .filter((row) => row.destination === 'all')
        .map((row) => row.attempts)
        .sort(),
    ).toEqual([1, 1, 2]);
    // webhook-id is per event and destination: the eur invoice has two different ones.
    const eurIds = settled.filter((row) => row.event_id === 'evt_eur').map((row) => row.webhook_id);
    expect(new Set(eurIds).size).toBe(2);
    expect(request!.headers['webhook-id']).toBe(settled.find((row) => row.destination === 'eu')!.webhook_id);

    const attempts = await db.pool.query<{
      attempt: number;
      http_status: number | null;
      error: string | null;
    }>(
      `SELECT attempt, http_status, error FROM hookgate.destination_attempts
        WHERE delivery_id = (SELECT id FROM hookgate.destination_deliveries WHERE webhook_id = $1)
        ORDER BY attempt`,
      [retried!.webhook_id],
    );
    expect(attempts.rows.map((row) => row.http_status)).toEqual([500, 200]);
    expect(attempts.rows[0]!.error).toMatch(/^HTTP 500/);
  });

  it("events show prints each destination's decision and delivery", async () => {
    const env = { ...SECRETS_ENV, DATABASE_URL: db.url, HOOKGATE_CONFIG: configFile };
    const shown = await runCliInProcess(['events', 'show', 'evt_usd', '--endpoint', 'pay'], env);
    expect(shown.code, shown.output).toBe(0);
    const lines = shown.stdout.split('\n');
    const section = lines.slice(lines.indexOf('destinations') + 1, lines.indexOf('destinations') + 4);
    expect(section[0]).toMatch(/^ {2}eu {5}filtered out \(not: \/data\/currency in \["eur","gbp"\]\)$/);
    expect(section[1]).toMatch(/^ {2}all {4}matches; delivery \d+ delivered, 1 attempt\(s\)$/);
    expect(section[2]).toBe('  never  filtered out (type invoice.paid matches none of nothing.*)');
    const json = await runCliInProcess(['events', 'show', 'evt_eur', '--endpoint', 'pay', '--json'], env);
    const destinations = (
      JSON.parse(json.stdout) as {
        destinations: { destination: string; matches: boolean; delivery: { status: string } | null }[];
      }
    ).destinations;
    expect(destinations.map((d) => [d.destination, d.matches, d.delivery?.status ?? null])).toEqual([
      ['eu', true, 'delivered'],
      ['all', true, 'delivered'],
      ['never', false, null],
    ]);
  });

  it('write no delivery for an event the handler did not process (a test event, settled ignored)', async () => {
    // A test event is settled `ignored` by every handler: not fanned out.
    await claimer.claim('pay', [
      { eventId: 'evt_test', eventType: 'hookgate.test', body: { id: 'evt_test' } },
    ]);
    await waitFor('the test event to settle', async () => {
      const { rows } = await db.pool.query(`SELECT status FROM hookgate.inbox WHERE event_id = 'evt_test'`);
      return rows[0]?.status === 'ignored';
    });
    const { rows } = await db.pool.query(
      `SELECT 1 FROM hookgate.destination_deliveries WHERE event_id = 'evt_test'`,
    );
    expect(rows).toEqual([]);
  });
});
