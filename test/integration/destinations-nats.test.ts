import { type JetStreamClient, type JetStreamManager, jetstream, jetstreamManager } from '@nats-io/jetstream';
import { connect, type NatsConnection, nanos } from '@nats-io/transport-node';
import { Webhook } from 'standardwebhooks';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseConfig } from '../../services/core/config/load.ts';
import type { Config } from '../../services/core/config/schema.ts';
import { redeliver } from '../../services/core/destinations/actions.ts';
import { insertDeliveries } from '../../services/core/destinations/deliveries.ts';
import { routesFrom, webhookIdFor } from '../../services/core/destinations/routes.ts';
import { createLogger } from '../../services/core/logging.ts';
import {
  createDestinationSender,
  type DestinationSender,
  type RunningDestinationRelay,
  startDestinationRelay,
} from '../../services/worker/destinations.ts';
import { startNatsServer, type TestNatsServer } from '../support/brokers.ts';
import { createTestDatabase, type TestDatabase } from '../support/database.ts';
import { DrivenClock } from '../support/driven-clock.ts';
import {
  Claimer,
  startTestWorker,
  type TestWorker,
  waitFor,
  workerConfig,
  workerConfigDocument,
} from '../support/worker-harness.ts';

// `type: nats` against a real JetStream (a nats-server -js of the test's own, on its own store):
// what a message carries, that a delivery is `delivered` only on the stream's acknowledgement,
// what the duplicate window drops and what it does not, a missing stream, a server that is down
// (retries, the breaker, the drain), and a server killed and restarted mid-stream (nothing lost,
// nothing twice in the stream, each entity's order kept).

const SIGNING = 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw';
const FAST = { backoff: '100ms', max: '1s', jitter: 0 };

let db: TestDatabase;
let nats: TestNatsServer;
let nc: NatsConnection;
let jsm: JetStreamManager;
let js: JetStreamClient;
let claimer: Claimer;
let worker: TestWorker;
let config: Config;
let clock: DrivenClock;
const senders: DestinationSender[] = [];
const relays: RunningDestinationRelay[] = [];

beforeAll(async () => {
  db = await createTestDatabase();
  nats = await startNatsServer();
  // The test's own client: it makes the streams and reads what they hold, apart from hookgate's.
  nc = await connect({ servers: nats.url, maxReconnectAttempts: -1, reconnectTimeWait: 100 });
  jsm = await jetstreamManager(nc);
  js = jetstream(nc);
  const stream = (name: string, subjects: string[], windowMs = 120_000) =>
    jsm.streams.add({ name, subjects, duplicate_window: nanos(windowMs) });
  await stream('HOOKS', ['webhooks.>']);
  await stream('SHORT', ['short.>'], 2_000);
  await stream('BULK', ['bulk.>']);
  await stream('ORDERED', ['ordered.>']);
  const bus = (subject: string, extra: Record<string, unknown> = {}) => ({
    type: 'nats',
    nats: { servers: [nats.url], subject },
    retry: { limit: 20, ...FAST },
    ...extra,
  });
  config = workerConfig(
    {
      pay: {
        handler: 'record',
        destinations: {
          stream: bus('webhooks.{endpoint}.{type}.{entity_id}', {
            filter: { types: ['headers.*'] },
            signing: { secrets: ['${BUS_SIGNING_SECRET}'] },
          }),
          short: bus('short.{type}', { filter: { types: ['window.*'] } }),
          late: bus('late.{type}', { filter: { types: ['late.*'] } }),
          guarded: bus('webhooks.guarded.{type}', {
            filter: { types: ['guarded.*'] },
            timeout: '500ms',
            breaker: { failures: 2, cooldown: '30s' },
          }),
          bulk: bus('bulk.{type}', { filter: { types: ['bulk.*'] }, concurrency: 8, timeout: '1s' }),
          ordered: bus('ordered.{entity_id}', {
            filter: { types: ['ordered.*'] },
            ordering: 'entity',
            concurrency: 8,
            timeout: '1s',
          }),
        },
      },
    },
    {},
    { BUS_SIGNING_SECRET: SIGNING },
  );
  claimer = await Claimer.start(db.url, config);
  worker = await startTestWorker(db.url, config);
  clock = await DrivenClock.fromDatabase(db.pool);
}, 60_000);

afterAll(async () => {
  for (const relay of relays) await relay.stop();
  for (const sender of senders) await sender.close();
  await nc?.close();
  await worker?.stop();
  await claimer?.stop();
  await nats?.stop();
  await db?.drop();
});

/** The clock at least at the database's: rows the apply wrote since are due. */
async function catchUp(): Promise<void> {
  const { rows } = await db.pool.query<{ now: Date }>('SELECT clock_timestamp() AS now');
  if (clock.since(rows[0]!.now) < 0) clock.setTo(rows[0]!.now);
}

function sender(): DestinationSender {
  const made = createDestinationSender({
    pool: db.pool,
    routes: routesFrom(config),
    logger: createLogger('silent'),
    now: clock.now,
  });
  const runOnce = made.runOnce.bind(made);
  made.runOnce = async (endpoint, destination) => {
    await catchUp();
    return runOnce(endpoint, destination);
  };
  senders.push(made);
  return made;
}

interface Row {
  id: string;
  event_id: string;
  status: string;
  attempts: number;
  webhook_id: string;
  last_error: string | null;
}

async function rows(destination: string): Promise<Row[]> {
  const { rows } = await db.pool.query<Row>(
    `SELECT id::text AS id, event_id, status, attempts, webhook_id, last_error
       FROM hookgate.destination_deliveries WHERE destination = $1 ORDER BY id`,
    [destination],
  );
  return rows;
}

/** A delivery row for an event already in the inbox, as the apply engine writes it. */
async function writtenBy(withDestination: Config, destination: string, eventId: string): Promise<Row[]> {
  await waitFor(`${eventId} applied`, async () => {
    const { rows } = await db.pool.query(
      `SELECT 1 FROM hookgate.inbox WHERE endpoint = 'pay' AND event_id = $1 AND status = 'processed'`,
      [eventId],
    );
    return rows.length === 1;
  });
  await insertDeliveries(db.pool, 'pay', [
    {
      destination,
      eventId,
      eventType: 'auth.checked',
      webhookId: webhookIdFor('pay', eventId, destination),
      entityKey: null,
      entityVersion: null,
    },
  ]);
  expect(
    routesFrom(withDestination)
      .get('pay')
      ?.some((r) => r.name === destination),
  ).toBe(true);
  return written(destination, 1);
}

const written = (destination: string, count: number) =>
  waitFor(`${count} deliveries to ${destination} written`, async () => {
    const found = await rows(destination);
    return found.length === count ? found : null;
  });

async function attemptHeads(deliveryId: string): Promise<(string | null)[]> {
  const { rows } = await db.pool.query<{ response_head: string | null }>(
    'SELECT response_head FROM hookgate.destination_attempts WHERE delivery_id = $1 ORDER BY attempt',
    [deliveryId],
  );
  return rows.map((row) => row.response_head);
}

interface Stored {
  seq: number;
  subject: string;
  msgId: string | null;
  headers: Record<string, string>;
  body: string;
}

/** Everything the stream holds, read message by message (no consumer of hookgate's). */
async function stored(stream: string): Promise<Stored[]> {
  // The test's own connection lives through the server's restarts too: until it has reconnected,
  // its requests time out.
  const info = await waitFor(`stream ${stream} answering the test's connection`, () =>
    jsm.streams.info(stream),
  );
  const out: Stored[] = [];
  for (let seq = info.state.first_seq; seq <= info.state.last_seq && info.state.messages > 0; seq += 1) {
    const message = await jsm.streams.getMessage(stream, { seq });
    if (!message) continue;
    const headers: Record<string, string> = {};
    for (const key of message.header.keys()) headers[key] = message.header.get(key);
    out.push({
      seq,
      subject: message.subject,
      msgId: message.header.get('Nats-Msg-Id') || null,
      headers,
      body: new TextDecoder().decode(message.data),
    });
  }
  return out;
}

describe('type: nats', () => {
  it('publishes each delivery with the event’s id, type, entity and the Standard Webhooks headers; delivered on the stream’s acknowledgement', async () => {
    await claimer.claim('pay', [
      {
        eventId: 'evt_h1',
        eventType: 'headers.created',
        entityType: 'customer',
        entityId: 'cus.1',
        version: 1,
      },
      {
        eventId: 'evt h2\n',
        eventType: 'headers.updated',
        entityType: 'customer',
        entityId: 'cus_2',
        version: 1,
      },
      { eventId: 'evt_h3', eventType: 'headers.deleted' },
    ]);
    const before = await written('stream', 3);
    const pass = await sender().runOnce('pay', 'stream');
    expect(pass.attempts.map((a) => a.status)).toEqual(['delivered', 'delivered', 'delivered']);
    const after = await rows('stream');
    expect(after.map((row) => row.status)).toEqual(['delivered', 'delivered', 'delivered']);

    const messages = await stored('HOOKS');
    expect(messages).toHaveLength(3);
    const byId = new Map(messages.map((message) => [message.headers['x-hookgate-event-id'], message]));
    const h1 = byId.get('evt_h1')!;
    // The entity id's dot is not a subject level; the type's are.
    expect(h1.subject).toBe('webhooks.pay.headers.created.cus_1');
    expect(byId.get('evt_h3')!.subject).toBe('webhooks.pay.headers.deleted._');
    for (const row of before) {
      const message = [...byId.values()].find((m) => m.msgId === row.webhook_id);
      expect(message, `the message of ${row.event_id}`).toBeDefined();
      expect(message!.headers['webhook-id']).toBe(row.webhook_id);
      expect(message!.headers['idempotency-key']).toBe(row.webhook_id);
      // Signed like an HTTP delivery, checked by the Standard Webhooks SDK.
      expect(() =>
        new Webhook(SIGNING).verify(message!.body, {
          'webhook-id': message!.headers['webhook-id']!,
          'webhook-timestamp': message!.headers['webhook-timestamp']!,
          'webhook-signature': message!.headers['webhook-signature']!,
        }),
      ).not.toThrow();
    }
    expect(h1.headers).toMatchObject({
      'x-hookgate-event-type': 'headers.created',
      'x-hookgate-entity-type': 'customer',
      'x-hookgate-entity-id': 'cus.1',
      'x-hookgate-endpoint': 'pay',
      'x-hookgate-destination': 'stream',
      'content-type': 'application/json',
    });
    expect(JSON.parse(h1.body)).toEqual({ id: 'evt_h1', type: 'headers.created' });
    // An id no header may carry as it is travels percent-encoded, as over HTTP.
    expect(byId.has('evt%20h2%0A')).toBe(true);
    expect(byId.get('evt_h3')!.headers['x-hookgate-entity-id']).toBeUndefined();
    // The attempt keeps what the stream acknowledged.
    const h1Row = after.find((row) => row.event_id === 'evt_h1')!;
    expect(await attemptHeads(h1Row.id)).toEqual([
      `stored in stream HOOKS at sequence ${h1.seq} (subject webhooks.pay.headers.created.cus_1)`,
    ]);
  });

  it('a redeliver inside the duplicate window is dropped by the stream; after the window it is a second message with the same Nats-Msg-Id', async () => {
    await claimer.claim('pay', [{ eventId: 'evt_w1', eventType: 'window.opened' }]);
    const [row] = await written('short', 1);
    const relay = sender();
    await relay.runOnce('pay', 'short');
    expect((await stored('SHORT')).map((m) => m.msgId)).toEqual([row!.webhook_id]);

    // Inside the window (2 s; the redeliver follows at once): acknowledged as a duplicate, not stored.
    const first = await redeliver(db.pool, config, {
      destination: 'short',
      statuses: ['delivered'],
      actor: 'test',
      dryRun: false,
    });
    expect(first.count).toBe(1);
    clock.advance(1_000);
    const inside = await relay.runOnce('pay', 'short');
    expect(inside.attempts.map((a) => a.status)).toEqual(['delivered']);
    expect((await attemptHeads(row!.id))[1]).toMatch(/^duplicate, already in stream SHORT at sequence 1 /);
    expect((await stored('SHORT')).map((m) => m.msgId)).toEqual([row!.webhook_id]);

    // Wait for the window to have passed: a probe id published again until the stream stores it
    // anew (the probe went after the delivery, so the delivery's window ended first).
    const probe = `probe-${Date.now()}`;
    await js.publish('short.probe', 'probe', { msgID: probe });
    await waitFor(
      'the duplicate window to pass',
      async () => {
        const ack = await js.publish('short.probe', 'probe', { msgID: probe });
        return !ack.duplicate;
      },
      30_000,
      50,
    );
    await redeliver(db.pool, config, {
      destination: 'short',
      statuses: ['delivered'],
      actor: 'test',
      dryRun: false,
    });
    clock.advance(1_000);
    await relay.runOnce('pay', 'short');
    const heads = await attemptHeads(row!.id);
    expect(heads.at(-1)).toMatch(/^stored in stream SHORT at sequence \d+/);
    const ours = (await stored('SHORT')).filter((m) => m.subject !== 'short.probe');
    // Consumers dedupe on the header: both messages carry the delivery's webhook id.
    expect(ours.map((m) => m.msgId)).toEqual([row!.webhook_id, row!.webhook_id]);
  });

  it('with no stream for the subject the attempt fails and is retried; once the stream exists it is delivered', async () => {
    await claimer.claim('pay', [{ eventId: 'evt_l1', eventType: 'late.arrived' }]);
    const [row] = await written('late', 1);
    const relay = sender();
    const failed = await relay.runOnce('pay', 'late');
    expect(failed.attempts.map((a) => a.status)).toEqual(['retrying']);
    const after = (await rows('late'))[0]!;
    expect(after.status).toBe('retrying');
    expect(after.last_error).toMatch(/^NATS publish to late\.late\.arrived failed: .*no responders/i);

    await jsm.streams.add({ name: 'LATE', subjects: ['late.>'] });
    clock.advance(1_000);
    const delivered = await relay.runOnce('pay', 'late');
    expect(delivered.attempts.map((a) => a.status)).toEqual(['delivered']);
    expect((await stored('LATE')).map((m) => m.msgId)).toEqual([row!.webhook_id]);
  });

  it('a server that is down: attempts fail and are retried, the breaker opens, and once the server is back the deliveries drain', async () => {
    await claimer.claim(
      'pay',
      [1, 2, 3, 4, 5].map((n) => ({ eventId: `evt_g${n}`, eventType: 'guarded.tried' })),
    );
    await written('guarded', 5);
    const relay = sender();
    // A connection first, so the outage is one the client lives through.
    await nats.kill();
    try {
      const failing = await relay.runOnce('pay', 'guarded');
      expect(failing.attempts.length).toBeGreaterThanOrEqual(2);
      expect(failing.attempts.every((a) => a.status === 'retrying')).toBe(true);
      const open = await relay.runOnce('pay', 'guarded');
      expect(open.gate).toBe('open');
      expect(open.attempts).toEqual([]);
      const waiting = await rows('guarded');
      expect(waiting.filter((row) => row.status === 'retrying').length).toBe(failing.attempts.length);
      expect(waiting.find((row) => row.status === 'retrying')!.last_error).toMatch(
        /^NATS publish to webhooks\.guarded\.guarded\.tried failed/,
      );
    } finally {
      await nats.start();
    }
    clock.advance(30_000);
    const probe = await relay.runOnce('pay', 'guarded');
    expect(probe.gate).toBe('probe');
    await waitFor('the probe delivered', async () => {
      clock.advance(2_000);
      const pass = await relay.runOnce('pay', 'guarded');
      return (await rows('guarded')).every((row) => row.status === 'delivered') ? pass : null;
    });
    const ids = (await rows('guarded')).map((row) => row.webhook_id).sort();
    const inStream = (await stored('HOOKS')).filter((m) => m.subject.startsWith('webhooks.guarded.'));
    expect(inStream.map((m) => m.msgId).sort()).toEqual(ids);
  });

  it('a server that needs credentials: delivered with the username and password of ${NAME} fields; a wrong password fails the attempt without naming it', async () => {
    const guarded = await startNatsServer(['--user', 'relay', '--pass', 'nats-pass-7f3a']);
    const admin = await connect({ servers: guarded.url, user: 'relay', pass: 'nats-pass-7f3a' });
    try {
      await (await jetstreamManager(admin)).streams.add({ name: 'AUTH', subjects: ['auth.>'] });
      const withPassword = (password: string) =>
        parseConfig(
          workerConfigDocument({
            pay: {
              handler: 'record',
              destinations: {
                authed: {
                  type: 'nats',
                  nats: {
                    servers: [guarded.url],
                    subject: 'auth.{type}',
                    username: '${NATS_USER}',
                    password: '${NATS_PASSWORD}',
                  },
                  filter: { types: ['auth.*'] },
                  timeout: '2s',
                  retry: { limit: 5, ...FAST },
                },
              },
            },
          }),
          { NATS_USER: 'relay', NATS_PASSWORD: password },
        );
      await claimer.claim('pay', [{ eventId: 'evt_a1', eventType: 'auth.checked' }]);
      // The worker of this file has no such destination: the row is written by hand, as an apply would.
      const [row] = await writtenBy(withPassword('nats-pass-7f3a'), 'authed', 'evt_a1');
      const wrong = createDestinationSender({
        pool: db.pool,
        routes: routesFrom(withPassword('not-the-pass-9')),
        logger: createLogger('silent'),
        now: clock.now,
      });
      senders.push(wrong);
      await catchUp();
      expect((await wrong.runOnce('pay', 'authed')).attempts.map((a) => a.status)).toEqual(['retrying']);
      const failed = (await rows('authed'))[0]!;
      expect(failed.last_error).toMatch(
        /^NATS publish to auth\.auth\.checked failed: .*(authorization|auth)/i,
      );
      expect(failed.last_error).not.toContain('not-the-pass-9');
      const right = createDestinationSender({
        pool: db.pool,
        routes: routesFrom(withPassword('nats-pass-7f3a')),
        logger: createLogger('silent'),
        now: clock.now,
      });
      senders.push(right);
      clock.advance(1_000);
      await catchUp();
      expect((await right.runOnce('pay', 'authed')).attempts.map((a) => a.status)).toEqual(['delivered']);
      const stored = await (await jetstreamManager(admin)).streams.getMessage('AUTH', { seq: 1 });
      expect(stored?.header.get('Nats-Msg-Id')).toBe(row!.webhook_id);
    } finally {
      await admin.close();
      await guarded.stop();
    }
  });

  it('killed and restarted on its store mid-stream: every delivery in the stream exactly once, each entity in version order', async () => {
    const bulk = Array.from({ length: 400 }, (_, n) => ({ eventId: `evt_b${n}`, eventType: 'bulk.sent' }));
    const ordered = ['a', 'b', 'c', 'd', 'e'].flatMap((entity) =>
      Array.from({ length: 20 }, (_, v) => ({
        eventId: `evt_o_${entity}_${v + 1}`,
        eventType: 'ordered.changed',
        entityType: 'thing',
        entityId: entity,
        version: v + 1,
      })),
    );
    await claimer.claim('pay', [...bulk, ...ordered]);
    await written('bulk', 400);
    await written('ordered', 100);
    const relay = startDestinationRelay({
      pool: worker.pool,
      routes: new Map([
        [
          'pay',
          routesFrom(config)
            .get('pay')!
            .filter((r) => r.name === 'bulk' || r.name === 'ordered'),
        ],
      ]),
      logger: createLogger('silent'),
      pollIntervalMs: 50,
    });
    relays.push(relay);
    const delivered = async (destination: string) =>
      (await rows(destination)).filter((row) => row.status === 'delivered').length;
    await waitFor('a quarter delivered', async () => (await delivered('bulk')) >= 100);
    await nats.kill();
    await waitFor('attempts failing while the server is down', async () =>
      (await rows('bulk')).some((row) => row.status === 'retrying'),
    );
    await nats.start();
    await waitFor(
      'everything delivered',
      async () => (await delivered('bulk')) === 400 && (await delivered('ordered')) === 100,
      120_000,
    );

    const bulkIds = (await rows('bulk')).map((row) => row.webhook_id).sort();
    const bulkStored = (await stored('BULK')).map((m) => m.msgId!).sort();
    expect(bulkStored).toEqual(bulkIds);
    const retried = (await rows('bulk')).filter((row) => row.attempts > 1).length;
    expect(retried).toBeGreaterThan(0);

    const orderedStored = await stored('ORDERED');
    expect(orderedStored).toHaveLength(100);
    for (const entity of ['a', 'b', 'c', 'd', 'e']) {
      const versions = orderedStored
        .filter((m) => m.subject === `ordered.${entity}`)
        .map((m) => Number(m.headers['x-hookgate-event-id']!.split('_').at(-1)));
      expect(versions, `entity ${entity}`).toEqual(Array.from({ length: 20 }, (_, v) => v + 1));
    }
  }, 180_000);
});
