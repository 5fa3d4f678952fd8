// The bus destinations' cost: one destination relay (one worker's) publishing a backlog of
// deliveries to a JetStream stream (`type: nats`) and, apart, to a RabbitMQ queue
// (`type: rabbitmq`), each against a bare client of the same library publishing the same bodies
// with the same acknowledgements (JetStream: the publish acknowledgement, with a Nats-Msg-Id;
// RabbitMQ: persistent, mandatory, a confirm per message) and the same number in flight, in the
// same run. The brokers are the tests' (test/support/brokers.ts): a nats-server of its own and a
// vhost of its own on the machine's RabbitMQ. Figures: messages per second of each side, their
// ratio, and this process's CPU per 1 000 messages of each (the brokers' and PostgreSQL's are not
// counted: the relay's claims and records are PostgreSQL's share).
import { jetstream, jetstreamManager } from '@nats-io/jetstream';
import { connect } from '@nats-io/transport-node';
import pg from 'pg';
import { Connection } from 'rabbitmq-client';
import { parseConfig } from '../services/core/config/load.ts';
import type { Config } from '../services/core/config/schema.ts';
import { insertDeliveries } from '../services/core/destinations/deliveries.ts';
import { routesFrom, webhookIdFor } from '../services/core/destinations/routes.ts';
import { createLogger } from '../services/core/logging.ts';
import { startDestinationRelay } from '../services/worker/destinations.ts';
import { createVhost, startNatsServer } from '../test/support/brokers.ts';
import type { BenchDatabase } from './processes.ts';

export interface BusesOptions {
  readonly events: number;
  /** Messages in flight, for both sides (the destination's `concurrency`). */
  readonly concurrency: number;
}

interface Side {
  readonly seconds: number;
  readonly perSecond: number;
  /** This process's CPU (user + system) per 1 000 messages, milliseconds. */
  readonly cpuMsPer1000: number;
}

interface BusReport {
  readonly relay: Side;
  readonly bare: Side;
  readonly throughputRatio: number;
  readonly cpuRatio: number;
}

export interface BusesReport {
  readonly events: number;
  readonly concurrency: number;
  readonly nats: BusReport;
  readonly rabbitmq: BusReport;
}

/** Deliveries of the unmeasured first relay phase. */
const WARMUP = 100;

function side(count: number, started: bigint, cpu: NodeJS.CpuUsage): Side {
  const seconds = Number(process.hrtime.bigint() - started) / 1e9;
  const used = process.cpuUsage(cpu);
  return { seconds, perSecond: count / seconds, cpuMsPer1000: (used.user + used.system) / count };
}

const compare = (relay: Side, bare: Side): BusReport => ({
  relay,
  bare,
  throughputRatio: relay.perSecond / bare.perSecond,
  cpuRatio: relay.cpuMsPer1000 / bare.cpuMsPer1000,
});

/** `count` messages, `lanes` in flight: `send(i)` for each i. */
async function lanes(count: number, inFlight: number, send: (i: number) => Promise<void>): Promise<void> {
  let next = 0;
  const lane = async () => {
    for (let i = next++; i < count; i = next++) await send(i);
  };
  await Promise.all(Array.from({ length: inFlight }, lane));
}

async function relayPhase(pool: pg.Pool, config: Config, destination: string, total: number): Promise<Side> {
  const cpu = process.cpuUsage();
  const started = process.hrtime.bigint();
  // This destination's loop only: the others' backlogs wait for their own phase.
  const routes = new Map(
    [...routesFrom(config)].map(([endpoint, list]) => [endpoint, list.filter((r) => r.name === destination)]),
  );
  const relay = startDestinationRelay({
    pool,
    routes,
    logger: createLogger('silent'),
    pollIntervalMs: 50,
  });
  for (;;) {
    const { rows } = await pool.query<{ n: number; dead: number }>(
      `SELECT count(*) FILTER (WHERE status = 'delivered')::int AS n,
              count(*) FILTER (WHERE status = 'dead')::int AS dead
         FROM hookgate.destination_deliveries WHERE destination = $1`,
      [destination],
    );
    if (rows[0]!.n >= total) break;
    // A bench that waits forever measures nothing: a dead delivery ends it, with the reason.
    if (rows[0]!.dead > 0) {
      await relay.stop();
      const { rows: why } = await pool.query<{ last_error: string }>(
        `SELECT last_error FROM hookgate.destination_deliveries WHERE destination = $1 AND status = 'dead' LIMIT 1`,
        [destination],
      );
      throw new Error(`buses: a delivery to ${destination} ended dead: ${why[0]?.last_error}`);
    }
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  const result = side(total, started, cpu);
  await relay.stop();
  return result;
}

export async function busesScenario(database: BenchDatabase, options: BusesOptions): Promise<BusesReport> {
  const nats = await startNatsServer();
  const vhost = await createVhost();
  const pool = new pg.Pool({ connectionString: database.url, max: 8 });
  // An idle client whose server went away must fail the scenario's next query, which says why,
  // not end the whole bench process with an unhandled 'error' event.
  pool.on('error', () => {});
  const nc = await connect({ servers: nats.url });
  const rabbit = new Connection({ url: vhost.clientUrl });
  rabbit.on('error', () => {});
  try {
    const jsm = await jetstreamManager(nc);
    await jsm.streams.add({ name: 'RELAY', subjects: ['relay.>'] });
    await jsm.streams.add({ name: 'BARE', subjects: ['bare.>'] });
    await rabbit.onConnect(10_000);
    for (const name of ['relay', 'bare']) {
      await rabbit.exchangeDeclare({ exchange: name, type: 'topic', durable: true });
      await rabbit.queueDeclare({ queue: name, durable: true });
      await rabbit.queueBind({ queue: name, exchange: name, routingKey: '#' });
    }
    const config = parseConfig(
      {
        endpoints: {
          bench: {
            provider: 'standard-webhooks',
            secrets: ['whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw'],
            destinations: {
              warmup: {
                type: 'nats',
                nats: { servers: [nats.url], subject: 'relay.warmup' },
                concurrency: options.concurrency,
              },
              stream: {
                type: 'nats',
                nats: { servers: [nats.url], subject: 'relay.{type}' },
                concurrency: options.concurrency,
              },
              queue: {
                type: 'rabbitmq',
                rabbitmq: {
                  url: vhost.url,
                  username: `\${BENCH_RMQ_USER}`,
                  password: `\${BENCH_RMQ_PASSWORD}`,
                  exchange: 'relay',
                  routingKey: '{type}',
                },
                concurrency: options.concurrency,
              },
            },
          },
        },
      },
      { BENCH_RMQ_USER: 'guest', BENCH_RMQ_PASSWORD: 'guest' },
    );
    // The backlog: processed inbox rows (a Stripe-sized payload) and one delivery per bus each.
    await pool.query(
      `INSERT INTO hookgate.inbox (endpoint, event_id, provider, event_type, payload, status, processed_at)
       SELECT 'bench', 'evt_' || n, 'standard-webhooks', 'invoice.paid',
              jsonb_build_object('id', 'evt_' || n, 'type', 'invoice.paid', 'lines', repeat('x', 1500)),
              'processed', now()
         FROM generate_series(1, $1) AS n`,
      [options.events],
    );
    const ids = Array.from({ length: options.events }, (_, n) => `evt_${n + 1}`);
    // Each destination's backlog is written just before its phase: a relay that starts ends the
    // deliveries of destinations its configuration lacks (here: the other phases').
    const backlog = async (destination: string, count: number) => {
      for (let from = 0; from < count; from += 1_000) {
        await insertDeliveries(
          pool,
          'bench',
          ids.slice(from, Math.min(count, from + 1_000)).map((eventId) => ({
            destination,
            eventId,
            eventType: 'invoice.paid',
            webhookId: webhookIdFor('bench', eventId, destination),
            entityKey: null,
            entityVersion: null,
          })),
        );
      }
    };
    const bodies = (
      await pool.query<{ body: string }>(
        `SELECT payload::text AS body FROM hookgate.inbox WHERE endpoint = 'bench' ORDER BY event_id`,
      )
    ).rows.map((row) => Buffer.from(row.body));

    // The relay's first phase pays for cold caches and code: a short one, not measured, first.
    await backlog('warmup', WARMUP);
    await relayPhase(pool, config, 'warmup', WARMUP);
    // NATS: the relay, then a bare JetStream publisher with the same acks.
    await backlog('stream', options.events);
    const natsRelay = await relayPhase(pool, config, 'stream', options.events);
    const js = jetstream(nc);
    let cpu = process.cpuUsage();
    let started = process.hrtime.bigint();
    await lanes(bodies.length, options.concurrency, async (i) => {
      await js.publish('bare.invoice.paid', bodies[i]!, { msgID: `bare-${i}` });
    });
    const natsBare = side(bodies.length, started, cpu);

    // RabbitMQ: the relay, then a bare confirm-mode publisher (persistent, mandatory).
    await backlog('queue', options.events);
    const rabbitRelay = await relayPhase(pool, config, 'queue', options.events);
    const publisher = rabbit.createPublisher({ confirm: true, maxAttempts: 1 });
    cpu = process.cpuUsage();
    started = process.hrtime.bigint();
    await lanes(bodies.length, options.concurrency, async (i) => {
      await publisher.send(
        {
          exchange: 'bare',
          routingKey: 'invoice.paid',
          mandatory: true,
          durable: true,
          messageId: `bare-${i}`,
          contentType: 'application/json',
        },
        bodies[i]!,
      );
    });
    const rabbitBare = side(bodies.length, started, cpu);
    await publisher.close();

    return {
      events: options.events,
      concurrency: options.concurrency,
      nats: compare(natsRelay, natsBare),
      rabbitmq: compare(rabbitRelay, rabbitBare),
    };
  } finally {
    await pool.end();
    await nc.close().catch(() => {});
    await rabbit.close().catch(() => {});
    await vhost.drop().catch(() => {});
    await nats.stop();
  }
}

export function renderBuses(report: BusesReport): string[] {
  const row = (name: string, s: Side) =>
    `  ${name.padEnd(20)} ${s.perSecond.toFixed(0).padStart(7)}/s  ${s.seconds.toFixed(1).padStart(6)} s  ${s.cpuMsPer1000.toFixed(0).padStart(6)} ms CPU per 1 000`;
  const bus = (name: string, b: BusReport) => [
    row(`${name} relay`, b.relay),
    row(`${name} bare client`, b.bare),
    `  ${name} relay / bare: throughput ×${b.throughputRatio.toFixed(2)}, CPU per 1 000 ×${b.cpuRatio.toFixed(2)} (this process; PostgreSQL's and the broker's not counted)`,
  ];
  return [
    `buses: ${report.events} messages to each bus, ${report.concurrency} in flight, one relay against a bare client with the same acks`,
    ...bus('nats', report.nats),
    ...bus('rabbitmq', report.rabbitmq),
  ];
}
