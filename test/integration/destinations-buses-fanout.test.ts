import { type JetStreamManager, jetstreamManager } from '@nats-io/jetstream';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { Connection } from 'rabbitmq-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseConfig } from '../../services/core/config/load.ts';
import type { Config } from '../../services/core/config/schema.ts';
import { routesFrom } from '../../services/core/destinations/routes.ts';
import { createLogger } from '../../services/core/logging.ts';
import { type RunningDestinationRelay, startDestinationRelay } from '../../services/worker/destinations.ts';
import { createVhost, startNatsServer, type TestNatsServer, type TestVhost } from '../support/brokers.ts';
import { createTestDatabase, type TestDatabase } from '../support/database.ts';
import { type FakeDownstream, startFakeDownstream } from '../support/fake-downstream.ts';
import {
  Claimer,
  startTestWorker,
  type TestWorker,
  waitFor,
  workerConfigDocument,
} from '../support/worker-harness.ts';

// One endpoint fanned out to an HTTP receiver, a JetStream stream and a RabbitMQ queue at once:
// 1 000 events, each counted by a consumer of each bus's own (the receiver's requests, the
// stream's messages, the queue's messages), every webhook id exactly once on each.

const EVENTS = 1_000;

let db: TestDatabase;
let nats: TestNatsServer;
let nc: NatsConnection;
let jsm: JetStreamManager;
let vhost: TestVhost;
let rabbit: Connection;
let downstream: FakeDownstream;
let claimer: Claimer;
let worker: TestWorker;
let config: Config;
let relay: RunningDestinationRelay | null = null;
let consumer: ReturnType<Connection['createConsumer']> | null = null;
/** Message ids the queue's consumer was handed, in arrival order. */
const consumed: string[] = [];

beforeAll(async () => {
  db = await createTestDatabase();
  nats = await startNatsServer();
  nc = await connect({ servers: nats.url });
  jsm = await jetstreamManager(nc);
  await jsm.streams.add({ name: 'FANOUT', subjects: ['fanout.>'] });
  vhost = await createVhost();
  rabbit = new Connection({ url: vhost.clientUrl });
  rabbit.on('error', () => {});
  await rabbit.onConnect(10_000);
  await rabbit.exchangeDeclare({ exchange: 'fanout', type: 'topic', durable: true });
  await rabbit.queueDeclare({ queue: 'fanout', durable: true });
  await rabbit.queueBind({ queue: 'fanout', exchange: 'fanout', routingKey: '#' });
  consumer = rabbit.createConsumer(
    { queue: 'fanout', queueOptions: { durable: true }, qos: { prefetchCount: 100 } },
    async (message) => {
      consumed.push(String(message.messageId));
    },
  );
  downstream = await startFakeDownstream();
  config = parseConfig(
    workerConfigDocument({
      pay: {
        handler: 'record',
        destinations: {
          web: { url: `${downstream.url}/in`, concurrency: 8 },
          stream: { type: 'nats', nats: { servers: [nats.url], subject: 'fanout.{type}' }, concurrency: 8 },
          queue: {
            type: 'rabbitmq',
            rabbitmq: {
              url: vhost.url,
              username: '${RMQ_USER}',
              password: '${RMQ_PASSWORD}',
              exchange: 'fanout',
              routingKey: '{endpoint}.{type}',
            },
            concurrency: 8,
          },
        },
      },
    }),
    { RMQ_USER: 'guest', RMQ_PASSWORD: 'guest' },
  );
  claimer = await Claimer.start(db.url, config);
  worker = await startTestWorker(db.url, config);
}, 60_000);

afterAll(async () => {
  await relay?.stop();
  await nc?.close();
  // The connection's close waits for its channels: the consumer's first.
  await consumer?.close();
  await rabbit?.close();
  await worker?.stop();
  await claimer?.stop();
  await downstream?.close();
  await vhost?.drop();
  await nats?.stop();
  await db?.drop();
});

const count = (ids: readonly string[]) => {
  const seen = new Map<string, number>();
  for (const id of ids) seen.set(id, (seen.get(id) ?? 0) + 1);
  return seen;
};

describe('one endpoint fanned out to HTTP, NATS and RabbitMQ at once', () => {
  it('every webhook id exactly once on each, counted by each bus’s own consumer', async () => {
    await claimer.claim(
      'pay',
      Array.from({ length: EVENTS }, (_, n) => ({ eventId: `evt_${n}`, eventType: 'fan.out' })),
    );
    relay = startDestinationRelay({
      pool: worker.pool,
      routes: routesFrom(config),
      logger: createLogger('silent'),
      pollIntervalMs: 50,
    });
    await waitFor(
      'every delivery delivered',
      async () => {
        const { rows } = await db.pool.query<{ n: number }>(
          `SELECT count(*)::int AS n FROM hookgate.destination_deliveries WHERE status = 'delivered'`,
        );
        return rows[0]!.n === EVENTS * 3;
      },
      180_000,
    );
    const { rows } = await db.pool.query<{ destination: string; webhook_id: string }>(
      'SELECT destination, webhook_id FROM hookgate.destination_deliveries',
    );
    const idsOf = (destination: string) =>
      rows
        .filter((row) => row.destination === destination)
        .map((row) => row.webhook_id)
        .sort();

    const http = count(downstream.requests.map((request) => String(request.headers['webhook-id'])));
    expect([...http.keys()].sort()).toEqual(idsOf('web'));
    expect([...http.values()].every((n) => n === 1)).toBe(true);

    const info = await jsm.streams.info('FANOUT');
    const inStream: string[] = [];
    for (let seq = info.state.first_seq; seq <= info.state.last_seq; seq += 1) {
      const message = await jsm.streams.getMessage('FANOUT', { seq });
      if (message) inStream.push(message.header.get('Nats-Msg-Id'));
    }
    const nats = count(inStream);
    expect([...nats.keys()].sort()).toEqual(idsOf('stream'));
    expect([...nats.values()].every((n) => n === 1)).toBe(true);

    // The queue's consumer sees each message once the broker routed it; wait for the last one.
    await waitFor('the queue consumed', async () => consumed.length >= EVENTS);
    const queue = count(consumed);
    expect([...queue.keys()].sort()).toEqual(idsOf('queue'));
    expect([...queue.values()].every((n) => n === 1)).toBe(true);
  }, 240_000);
});
