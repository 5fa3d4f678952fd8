// The fan-out's cost: the destination relay delivering a backlog of deliveries (N events × D
// destinations, a Stripe-sized payload) to a local sink, against a bare HTTP client sending the
// same requests (same bodies, same concurrency per destination) to the same sink, in the same
// run. The sink runs in a child process, so this process's CPU is the sender's alone (PostgreSQL's
// is not counted: it is the relay's claims and records). Figures: deliveries per second of each,
// their ratio, and this process's CPU per delivery of each, with PostgreSQL's CPU per delivery on
// the relay's side (its claims and records, less the bench's own progress query, measured alone;
// NaN when PostgreSQL runs elsewhere). Then, on the same events: one
// destination with `ordering: entity` against one without (the same backlog with entities), and
// one with a `rateLimit`, whose throughput should be its limit (achieved / limit).
import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import pg from 'pg';
import { parseConfig } from '../services/core/config/load.ts';
import type { Config } from '../services/core/config/schema.ts';
import { insertDeliveries } from '../services/core/destinations/deliveries.ts';
import { routesFrom, webhookIdFor } from '../services/core/destinations/routes.ts';
import { createLogger } from '../services/core/logging.ts';
import { startDestinationRelay } from '../services/worker/destinations.ts';
import { postgresCpu, postmasterPid } from './cpu.ts';
import type { BenchDatabase } from './processes.ts';

export interface DestinationsOptions {
  readonly events: number;
  readonly destinations: number;
  /** Deliveries in flight per destination, for both sides. */
  readonly concurrency: number;
  /** Entities the ordered/unordered comparison spreads the events over. */
  readonly entities: number;
  /** The rate-limited destination's limit (deliveries per second; burst the same). */
  readonly ratePerSecond: number;
  /** How long the rate-limited phase runs at its limit (its backlog is this many seconds' worth). */
  readonly rateSeconds: number;
}

interface Side {
  readonly seconds: number;
  readonly perSecond: number;
  /** This process's CPU (user + system) per delivery, microseconds. */
  readonly cpuMicrosPerDelivery: number;
  /** PostgreSQL's CPU per delivery, microseconds (the relay's sides; NaN for the bare client's). */
  readonly postgresMicrosPerDelivery: number;
}

export interface DestinationsReport {
  readonly deliveries: number;
  readonly destinations: number;
  readonly concurrency: number;
  readonly relay: Side;
  readonly bare: Side;
  /** relay deliveries per second over the bare client's. */
  readonly throughputRatio: number;
  /** relay CPU per delivery over the bare client's. */
  readonly cpuRatio: number;
  /** One destination, the same events spread over `entities` entities: unordered, then `ordering: entity`. */
  readonly ordering: {
    readonly entities: number;
    readonly unordered: Side;
    readonly ordered: Side;
    readonly throughputRatio: number;
    readonly cpuRatio: number;
  };
  /** One destination with `rateLimit`: deliveries per second after its first burst, against the limit. */
  readonly rateLimited: {
    readonly limit: number;
    readonly deliveries: number;
    readonly seconds: number;
    readonly achieved: number;
    readonly achievedOverLimit: number;
  };
}

const SINK = `
  const server = require('node:http').createServer((req, res) => {
    req.resume();
    req.on('end', () => res.writeHead(204).end());
  });
  server.keepAliveTimeout = 60000;
  server.listen(0, '127.0.0.1', () => process.stdout.write(server.address().port + '\\n'));`;

async function startSink(): Promise<{ url: string; child: ChildProcess }> {
  const child = spawn(process.execPath, ['-e', SINK], { stdio: ['ignore', 'pipe', 'inherit'] });
  const [chunk] = (await once(child.stdout!, 'data')) as [Buffer];
  return { url: `http://127.0.0.1:${chunk.toString().trim()}`, child };
}

/** About the size of a Stripe invoice event. */
function payload(n: number): Record<string, unknown> {
  return {
    id: `evt_${n}`,
    type: 'invoice.paid',
    data: { object: { id: `in_${n}`, amount_due: 1200, currency: 'eur', lines: 'x'.repeat(1500) } },
  };
}

function side(deliveries: number, started: bigint, cpu: NodeJS.CpuUsage): Side {
  const seconds = Number(process.hrtime.bigint() - started) / 1e9;
  const used = process.cpuUsage(cpu);
  return {
    seconds,
    perSecond: deliveries / seconds,
    cpuMicrosPerDelivery: (used.user + used.system) / deliveries,
    postgresMicrosPerDelivery: Number.NaN,
  };
}

/** Deliveries of events evt_1 … evt_count to these destinations, as the apply engine writes them. */
async function backlog(
  pool: pg.Pool,
  count: number,
  destinations: readonly string[],
  entityOf: (eventId: string) => { entityKey: string | null; entityVersion: string | null },
): Promise<void> {
  for (let from = 1; from <= count; from += 1_000) {
    const ids = Array.from({ length: Math.min(1_000, count - from + 1) }, (_, n) => `evt_${from + n}`);
    await insertDeliveries(
      pool,
      'bench',
      ids.flatMap((eventId) =>
        destinations.map((destination) => ({
          destination,
          eventId,
          eventType: 'invoice.paid',
          webhookId: webhookIdFor('bench', eventId, destination),
          ...entityOf(eventId),
        })),
      ),
    );
  }
}

/** Runs the relay over the config's destinations until `total` (of `only`, if given) are delivered. */
async function relayPhase(
  pool: pg.Pool,
  postmaster: number | null,
  config: Config,
  total: number,
  only?: string,
): Promise<Side> {
  const delivered = async () =>
    (
      await pool.query<{ n: number }>(
        `SELECT count(*)::int AS n FROM hookgate.destination_deliveries
          WHERE status = 'delivered' AND ($1::text IS NULL OR destination = $1)`,
        [only ?? null],
      )
    ).rows[0]!.n;
  const postgresBefore = postgresCpu(postmaster);
  const cpu = process.cpuUsage();
  const started = process.hrtime.bigint();
  const relay = startDestinationRelay({
    pool,
    routes: routesFrom(config),
    logger: createLogger('silent'),
    pollIntervalMs: 50,
  });
  let polls = 0;
  for (;;) {
    polls += 1;
    if ((await delivered()) >= total) break;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  const postgresDuring = postgresCpu(postmaster) - postgresBefore;
  const result = side(total, started, cpu);
  await relay.stop();
  // PostgreSQL's CPU is the relay's less this progress query's own: the same number of polls
  // again, over the same (now settled) rows, with the relay stopped.
  const pollsBefore = postgresCpu(postmaster);
  for (let n = 0; n < polls; n += 1) await delivered();
  const pollsCost = postgresCpu(postmaster) - pollsBefore;
  return { ...result, postgresMicrosPerDelivery: ((postgresDuring - pollsCost) * 1e6) / total };
}

export async function destinationsScenario(
  database: BenchDatabase,
  options: DestinationsOptions,
): Promise<DestinationsReport> {
  const sink = await startSink();
  const pool = new pg.Pool({ connectionString: database.url, max: options.destinations * 2 + 4 });
  // An idle client whose server went away must fail the scenario's next query, which says why,
  // not end the whole bench process with an unhandled 'error' event.
  pool.on('error', () => {});
  try {
    const client = await pool.connect();
    const postmaster = await postmasterPid(client).finally(() => client.release());
    const names = Array.from({ length: options.destinations }, (_, n) => `dest${n}`);
    const config = parseConfig(
      {
        endpoints: {
          bench: {
            provider: 'standard-webhooks',
            secrets: ['whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw'],
            destinations: Object.fromEntries(
              names.map((name) => [name, { url: `${sink.url}/${name}`, concurrency: options.concurrency }]),
            ),
          },
        },
        relay: { pollingInterval: '50ms' },
      },
      {},
    );
    // The backlog: processed inbox rows and their deliveries, as the apply engine leaves them.
    await pool.query(
      `INSERT INTO hookgate.inbox (endpoint, event_id, provider, event_type, payload, status, processed_at)
       SELECT 'bench', 'evt_' || n, 'standard-webhooks', 'invoice.paid', $2::jsonb || jsonb_build_object('id', 'evt_' || n), 'processed', now()
         FROM generate_series(1, $1) AS n`,
      [options.events, JSON.stringify(payload(0))],
    );
    await backlog(pool, options.events, names, () => ({ entityKey: null, entityVersion: null }));
    const total = options.events * options.destinations;
    // The bodies as the relay sends them: the stored payload as PostgreSQL writes it.
    const bodies = (
      await pool.query<{ body: string }>(
        `SELECT payload::text AS body FROM hookgate.inbox WHERE endpoint = 'bench' ORDER BY event_id`,
      )
    ).rows.map((row) => row.body);

    const relaySide = await relayPhase(pool, postmaster, config, total);

    // Bare client: the same requests, `concurrency` in flight per destination.
    const cpu = process.cpuUsage();
    const started = process.hrtime.bigint();
    await Promise.all(
      names.map(async (name) => {
        let next = 0;
        const lane = async () => {
          for (let i = next++; i < bodies.length; i = next++) {
            const response = await fetch(`${sink.url}/${name}`, {
              method: 'POST',
              headers: { 'content-type': 'application/json', 'idempotency-key': `k${i}` },
              body: bodies[i]!,
              redirect: 'manual',
            });
            await response.body?.cancel();
          }
        };
        await Promise.all(Array.from({ length: options.concurrency }, lane));
      }),
    );
    const bareSide = side(total, started, cpu);

    // Ordering: the same events to one destination, each event an entity's next version.
    const entityOf = (eventId: string) => {
      const n = Number(eventId.slice(4));
      return {
        entityKey: JSON.stringify(['invoice', `in_${n % options.entities}`]),
        entityVersion: String(n),
      };
    };
    const single = (name: string, extra: Record<string, unknown>) =>
      parseConfig(
        {
          endpoints: {
            bench: {
              provider: 'standard-webhooks',
              secrets: ['whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw'],
              destinations: {
                [name]: { url: `${sink.url}/${name}`, concurrency: options.concurrency, ...extra },
              },
            },
          },
          relay: { pollingInterval: '50ms' },
        },
        {},
      );
    // Each phase's backlog is written just before it: a relay settles the deliveries of a
    // destination its configuration lacks `dead` (destination_unconfigured), so an ordered
    // backlog written beside the unordered one was dead before its own phase began.
    await backlog(pool, options.events, ['unordered'], entityOf);
    const unordered = await relayPhase(
      pool,
      postmaster,
      single('unordered', {}),
      options.events,
      'unordered',
    );
    await backlog(pool, options.events, ['ordered'], entityOf);
    const ordered = await relayPhase(
      pool,
      postmaster,
      single('ordered', { ordering: 'entity' }),
      options.events,
      'ordered',
    );

    // Rate limit: a backlog of rateSeconds at the limit (plus its first burst).
    const burst = Math.max(1, Math.ceil(options.ratePerSecond));
    const limitedCount = Math.min(
      options.events,
      burst + Math.round(options.ratePerSecond * options.rateSeconds),
    );
    await backlog(pool, limitedCount, ['limited'], () => ({ entityKey: null, entityVersion: null }));
    const limitedConfig = single('limited', { rateLimit: { perSecond: options.ratePerSecond, burst } });
    const limited = await relayPhase(pool, postmaster, limitedConfig, limitedCount, 'limited');
    const achieved = (limitedCount - burst) / limited.seconds;
    return {
      deliveries: total,
      destinations: options.destinations,
      concurrency: options.concurrency,
      relay: relaySide,
      bare: bareSide,
      throughputRatio: relaySide.perSecond / bareSide.perSecond,
      cpuRatio: relaySide.cpuMicrosPerDelivery / bareSide.cpuMicrosPerDelivery,
      ordering: {
        entities: options.entities,
        unordered,
        ordered,
        throughputRatio: ordered.perSecond / unordered.perSecond,
        cpuRatio: ordered.cpuMicrosPerDelivery / unordered.cpuMicrosPerDelivery,
      },
      rateLimited: {
        limit: options.ratePerSecond,
        deliveries: limitedCount,
        seconds: limited.seconds,
        achieved,
        achievedOverLimit: achieved / options.ratePerSecond,
      },
    };
  } finally {
    await pool.end();
    sink.child.kill();
  }
}

export function renderDestinations(report: DestinationsReport): string[] {
  const row = (name: string, s: Side) =>
    `  ${name.padEnd(12)} ${s.perSecond.toFixed(0).padStart(7)}/s  ${s.seconds.toFixed(1).padStart(6)} s  ${s.cpuMicrosPerDelivery.toFixed(0).padStart(6)} µs CPU per delivery${Number.isNaN(s.postgresMicrosPerDelivery) ? '' : `, PostgreSQL ${s.postgresMicrosPerDelivery.toFixed(0)} µs`}`;
  return [
    `destinations: ${report.deliveries} deliveries (${report.deliveries / report.destinations} events × ${report.destinations} destinations), ${report.concurrency} in flight per destination, to a local sink`,
    row('relay', report.relay),
    row('bare client', report.bare),
    `  relay / bare: throughput ×${report.throughputRatio.toFixed(2)}, CPU per delivery ×${report.cpuRatio.toFixed(2)} (this process)`,
    `  one destination, ${report.deliveries / report.destinations} events over ${report.ordering.entities} entities:`,
    row('unordered', report.ordering.unordered),
    row('ordered', report.ordering.ordered),
    `  ordered / unordered: throughput ×${report.ordering.throughputRatio.toFixed(2)}, CPU per delivery ×${report.ordering.cpuRatio.toFixed(2)}`,
    `  rateLimit ${report.rateLimited.limit}/s: ${report.rateLimited.deliveries} deliveries in ${report.rateLimited.seconds.toFixed(1)} s, ${report.rateLimited.achieved.toFixed(1)}/s after the first burst: achieved / limit ×${report.rateLimited.achievedOverLimit.toFixed(3)}`,
  ];
}
