import { Registry } from 'prom-client';
import { Connection } from 'rabbitmq-client';
import { Webhook } from 'standardwebhooks';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseConfig } from '../../services/core/config/load.ts';
import type { Config } from '../../services/core/config/schema.ts';
import { pauseDestination, redeliver, resumeDestination } from '../../services/core/destinations/actions.ts';
import { openBreakers } from '../../services/core/destinations/breaker.ts';
import { routesFrom } from '../../services/core/destinations/routes.ts';
import { createLogger } from '../../services/core/logging.ts';
import {
  createDestinationMetrics,
  createDestinationSender,
  type DestinationSender,
  type RunningDestinationRelay,
  startDestinationRelay,
} from '../../services/worker/destinations.ts';
import { createVhost, rabbitmqStartApp, rabbitmqStopApp, type TestVhost } from '../support/brokers.ts';
import { createTestDatabase, type TestDatabase } from '../support/database.ts';
import { DrivenClock } from '../support/driven-clock.ts';
import {
  Claimer,
  startTestWorker,
  type TestWorker,
  waitFor,
  workerConfigDocument,
} from '../support/worker-harness.ts';

// `type: rabbitmq` against the machine's RabbitMQ, in a vhost of the test's own: what a message
// carries (persistent, message_id = webhook id, the headers), delivered only on the broker's
// confirm, an unroutable message and a missing exchange as failed attempts, retried until they
// can go; and the broker stopped mid-stream (its application, for a few seconds): attempts fail,
// the breaker opens, and once it is back everything drains, none lost, each entity in order, and
// a message seen twice only for a delivery that was sent again after a failed attempt.

const SIGNING = 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw';
const FAST = { backoff: '100ms', max: '1s', jitter: 0 };

let db: TestDatabase;
let vhost: TestVhost;
let rabbit: Connection;
let claimer: Claimer;
let worker: TestWorker;
let config: Config;
let clock: DrivenClock;
const senders: DestinationSender[] = [];
const relays: RunningDestinationRelay[] = [];

beforeAll(async () => {
  db = await createTestDatabase();
  vhost = await createVhost();
  // The test's own client: it makes the exchanges and queues and reads them, apart from hookgate's.
  rabbit = new Connection({ url: vhost.clientUrl, retryLow: 100, retryHigh: 500 });
  rabbit.on('error', () => {});
  await rabbit.onConnect(10_000);
  for (const exchange of ['webhooks', 'lonely']) {
    await rabbit.exchangeDeclare({ exchange, type: 'topic', durable: true });
  }
  for (const [queue, key] of [
    ['props', 'props.#'],
    ['bulk', 'bulk.#'],
    ['ordered', 'ordered.#'],
  ] as const) {
    await rabbit.queueDeclare({ queue, durable: true });
    await rabbit.queueBind({ queue, exchange: 'webhooks', routingKey: key });
  }
  const bus = (exchange: string, routingKey: string, extra: Record<string, unknown> = {}) => ({
    type: 'rabbitmq',
    rabbitmq: { url: vhost.url, username: '${RMQ_USER}', password: '${RMQ_PASSWORD}', exchange, routingKey },
    retry: { limit: 50, ...FAST },
    ...extra,
  });
  config = parseConfig(
    workerConfigDocument({
      pay: {
        handler: 'record',
        destinations: {
          props: bus('webhooks', 'props.{endpoint}.{type}.{entity_id}', {
            filter: { types: ['props.*'] },
            signing: { secrets: ['${BUS_SIGNING_SECRET}'] },
          }),
          lonely: bus('lonely', 'lonely.{type}', { filter: { types: ['lonely.*'] } }),
          missing: bus('not-yet', 'missing.{type}', { filter: { types: ['missing.*'] } }),
          bulk: bus('webhooks', 'bulk.{type}', {
            filter: { types: ['bulk.*'] },
            concurrency: 8,
            timeout: '2s',
            breaker: { failures: 3, cooldown: '500ms' },
            // Slow enough that the outage falls mid-stream.
            rateLimit: { perSecond: 40 },
          }),
          ordered: bus('webhooks', 'ordered.{entity_id}', {
            filter: { types: ['ordered.*'] },
            ordering: 'entity',
            concurrency: 8,
            timeout: '2s',
            rateLimit: { perSecond: 10 },
          }),
        },
      },
    }),
    { RMQ_USER: 'guest', RMQ_PASSWORD: 'guest', BUS_SIGNING_SECRET: SIGNING },
  );
  claimer = await Claimer.start(db.url, config);
  worker = await startTestWorker(db.url, config);
  clock = await DrivenClock.fromDatabase(db.pool);
}, 60_000);

afterAll(async () => {
  for (const relay of relays) await relay.stop();
  for (const sender of senders) await sender.close();
  await rabbit?.close();
  await worker?.stop();
  await claimer?.stop();
  await vhost?.drop();
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
  senders.push(made);
  return {
    async runOnce(endpoint, destination) {
      await catchUp();
      return made.runOnce(endpoint, destination);
    },
    close: () => made.close(),
  };
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

const written = (destination: string, count: number) =>
  waitFor(`${count} deliveries to ${destination} written`, async () => {
    const found = await rows(destination);
    return found.length === count ? found : null;
  });

interface Received {
  routingKey: string;
  messageId: string | undefined;
  durable: boolean | undefined;
  headers: Record<string, unknown>;
  body: string;
}

/** Everything the queue holds, taken one by one. */
async function drain(queue: string): Promise<Received[]> {
  const out: Received[] = [];
  for (;;) {
    const message = await rabbit.basicGet({ queue, noAck: true });
    if (!message) return out;
    out.push({
      routingKey: message.routingKey,
      messageId: message.messageId,
      durable: message.durable,
      headers: message.headers ?? {},
      body: Buffer.isBuffer(message.body) ? message.body.toString('utf8') : JSON.stringify(message.body),
    });
  }
}

describe('type: rabbitmq', () => {
  it('publishes persistent messages with message_id = webhook id and the event’s headers; delivered on the broker’s confirm', async () => {
    await claimer.claim('pay', [
      {
        eventId: 'evt_p1',
        eventType: 'props.created',
        entityType: 'customer',
        entityId: 'cus_1',
        version: 1,
      },
      { eventId: 'evt_p2', eventType: 'props.updated' },
    ]);
    const before = await written('props', 2);
    const pass = await sender().runOnce('pay', 'props');
    expect(pass.attempts.map((a) => a.status)).toEqual(['delivered', 'delivered']);
    const messages = await drain('props');
    expect(messages).toHaveLength(2);
    for (const row of before) {
      const message = messages.find((m) => m.messageId === row.webhook_id);
      // This client hands an application/json body over parsed: the signature is checked over
      // the payload as stored (what was sent), and the body received must be that payload.
      const { rows: payload } = await db.pool.query<{ text: string }>(
        `SELECT payload::text AS text FROM hookgate.inbox WHERE endpoint = 'pay' AND event_id = $1`,
        [row.event_id],
      );
      expect(JSON.parse(message!.body)).toEqual(JSON.parse(payload[0]!.text));
      expect(message, `the message of ${row.event_id}`).toBeDefined();
      expect(message!.durable).toBe(true);
      expect(message!.headers['webhook-id']).toBe(row.webhook_id);
      expect(message!.headers['x-hookgate-event-id']).toBe(row.event_id);
      expect(() =>
        new Webhook(SIGNING).verify(payload[0]!.text, {
          'webhook-id': String(message!.headers['webhook-id']),
          'webhook-timestamp': String(message!.headers['webhook-timestamp']),
          'webhook-signature': String(message!.headers['webhook-signature']),
        }),
      ).not.toThrow();
    }
    const p1 = messages.find((m) => m.headers['x-hookgate-event-id'] === 'evt_p1')!;
    expect(p1.routingKey).toBe('props.pay.props.created.cus_1');
    expect(p1.headers).toMatchObject({
      'x-hookgate-event-type': 'props.created',
      'x-hookgate-entity-type': 'customer',
      'x-hookgate-entity-id': 'cus_1',
    });
    const p2 = messages.find((m) => m.headers['x-hookgate-event-id'] === 'evt_p2')!;
    expect(p2.routingKey).toBe('props.pay.props.updated._');
    expect(p2.headers['x-hookgate-entity-id']).toBeUndefined();
  });

  it('paused: nothing is published and nothing counted; resumed: delivered; redelivered: a second message with the same message_id; counted with type rabbitmq', async () => {
    await claimer.claim('pay', [{ eventId: 'evt_p9', eventType: 'props.paused' }]);
    const registry = new Registry();
    const metrics = createDestinationMetrics(registry);
    const counting = createDestinationSender({
      pool: db.pool,
      routes: routesFrom(config),
      logger: createLogger('silent'),
      now: clock.now,
      metrics,
    });
    senders.push(counting);
    await pauseDestination(db.pool, config, { destination: 'props', actor: 'test' });
    const [row] = (await waitFor('the delivery written held', async () => {
      const found = (await rows('props')).filter((r) => r.event_id === 'evt_p9');
      return found.length === 1 && found[0]!.status === 'held' ? found : null;
    }))!;
    await catchUp();
    const paused = await counting.runOnce('pay', 'props');
    expect(paused.attempts).toEqual([]);
    expect(await drain('props')).toEqual([]);
    await resumeDestination(db.pool, config, { destination: 'props', actor: 'test' });
    await catchUp();
    const resumed = await counting.runOnce('pay', 'props');
    expect(resumed.attempts.map((a) => a.status)).toEqual(['delivered']);
    await redeliver(db.pool, config, {
      destination: 'props',
      ids: [row!.id],
      statuses: ['delivered'],
      actor: 'test',
      dryRun: false,
    });
    clock.advance(1_000);
    await catchUp();
    expect((await counting.runOnce('pay', 'props')).attempts.map((a) => a.status)).toEqual(['delivered']);
    // RabbitMQ keeps no duplicate window: the consumer dedupes on message_id.
    expect((await drain('props')).map((m) => m.messageId)).toEqual([row!.webhook_id, row!.webhook_id]);
    const counted = await registry.getSingleMetric('hookgate_destination_deliveries_total')?.get();
    expect(counted?.values).toEqual([
      { labels: { endpoint: 'pay', destination: 'props', type: 'rabbitmq', outcome: 'delivered' }, value: 2 },
    ]);
  });

  it('an unroutable message (mandatory, returned) is a failed attempt, retried; delivered once a queue is bound', async () => {
    await claimer.claim('pay', [{ eventId: 'evt_u1', eventType: 'lonely.sent' }]);
    const [row] = await written('lonely', 1);
    const relay = sender();
    const failed = await relay.runOnce('pay', 'lonely');
    expect(failed.attempts.map((a) => a.status)).toEqual(['retrying']);
    expect((await rows('lonely'))[0]!.last_error).toBe(
      'RabbitMQ returned the message as unroutable (312 NO_ROUTE): no queue is bound to exchange lonely with routing key lonely.lonely.sent',
    );
    await rabbit.queueDeclare({ queue: 'lonely', durable: true });
    await rabbit.queueBind({ queue: 'lonely', exchange: 'lonely', routingKey: '#' });
    clock.advance(1_000);
    const delivered = await relay.runOnce('pay', 'lonely');
    expect(delivered.attempts.map((a) => a.status)).toEqual(['delivered']);
    expect((await drain('lonely')).map((m) => m.messageId)).toEqual([row!.webhook_id]);
  });

  it('a missing exchange is a failed attempt, retried; delivered once it exists', async () => {
    await claimer.claim('pay', [{ eventId: 'evt_m1', eventType: 'missing.sent' }]);
    const [row] = await written('missing', 1);
    const relay = sender();
    const failed = await relay.runOnce('pay', 'missing');
    expect(failed.attempts.map((a) => a.status)).toEqual(['retrying']);
    expect((await rows('missing'))[0]!.last_error).toMatch(
      /^RabbitMQ publish to exchange not-yet with routing key missing\.missing\.sent failed: .*NOT_FOUND - no exchange 'not-yet'/,
    );
    await rabbit.exchangeDeclare({ exchange: 'not-yet', type: 'topic', durable: true });
    await rabbit.queueDeclare({ queue: 'missing', durable: true });
    await rabbit.queueBind({ queue: 'missing', exchange: 'not-yet', routingKey: '#' });
    // The channel the refusal closed is opened anew.
    await waitFor('delivered once the exchange exists', async () => {
      clock.advance(2_000);
      await relay.runOnce('pay', 'missing');
      return (await rows('missing'))[0]!.status === 'delivered';
    });
    expect((await drain('missing')).map((m) => m.messageId)).toEqual([row!.webhook_id]);
  });

  it('stopped mid-stream: attempts fail, the breaker opens, then everything drains; none lost, each entity in order, a repeat only after a failed attempt', async () => {
    const bulk = Array.from({ length: 300 }, (_, n) => ({ eventId: `evt_b${n}`, eventType: 'bulk.sent' }));
    const ordered = ['a', 'b', 'c', 'd'].flatMap((entity) =>
      Array.from({ length: 15 }, (_, v) => ({
        eventId: `evt_o_${entity}_${v + 1}`,
        eventType: 'ordered.changed',
        entityType: 'thing',
        entityId: entity,
        version: v + 1,
      })),
    );
    await claimer.claim('pay', [...bulk, ...ordered]);
    await written('bulk', 300);
    await written('ordered', 60);
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
    await waitFor('some delivered', async () => (await delivered('bulk')) >= 50);
    // The machine's RabbitMQ: the outage lasts while the breaker is seen open, no longer.
    await rabbitmqStopApp();
    try {
      await waitFor('the breaker open', async () =>
        (await openBreakers(db.pool)).some((b) => b.destination === 'bulk' && b.state === 'open'),
      );
      expect((await rows('bulk')).some((row) => row.status === 'retrying')).toBe(true);
    } finally {
      await rabbitmqStartApp();
    }
    await waitFor(
      'everything delivered',
      async () => (await delivered('bulk')) === 300 && (await delivered('ordered')) === 60,
      120_000,
    );
    expect((await openBreakers(db.pool)).filter((b) => b.destination === 'bulk')).toEqual([]);

    const bulkRows = await rows('bulk');
    const got = await drain('bulk');
    const seen = new Map<string, number>();
    for (const message of got) seen.set(message.messageId!, (seen.get(message.messageId!) ?? 0) + 1);
    // None lost.
    expect(bulkRows.filter((row) => !seen.has(row.webhook_id))).toEqual([]);
    // A message seen twice only for a delivery sent again after a failed attempt.
    const repeated = bulkRows.filter((row) => (seen.get(row.webhook_id) ?? 0) > 1);
    expect(repeated.filter((row) => row.attempts < 2)).toEqual([]);
    expect(got.length).toBe(300 + repeated.reduce((sum, row) => sum + seen.get(row.webhook_id)! - 1, 0));

    const orderedGot = await drain('ordered');
    for (const entity of ['a', 'b', 'c', 'd']) {
      const versions = orderedGot
        .filter((m) => m.routingKey === `ordered.${entity}`)
        .map((m) => Number(String(m.headers['x-hookgate-event-id']).split('_').at(-1)));
      // A repeat (same version again, right after itself) is the one kind of duplicate; the order holds.
      const firsts = versions.filter((v, i) => i === 0 || versions[i - 1] !== v);
      expect(firsts, `entity ${entity}`).toEqual(Array.from({ length: 15 }, (_, v) => v + 1));
    }
  }, 240_000);
});
