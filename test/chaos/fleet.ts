// What the database-tier runs (PgBouncer, failover, network faults) share: a fleet of real
// gateway and worker processes restarted when they end (chaos.ts's Supervised), signed load with
// duplicates from the load driver with every answer placed in time, and the settlement at the
// end — drain, `hookgate verify`, the effect counter — reduced to the figures the runs print.
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import pg from 'pg';
import { type DriverAnswer, type DriverResult, drive } from '../../load/driver/driver.ts';
import { DEFAULT_MIX } from '../../load/lib/mix.ts';
import type { VerifyReport } from '../../services/cli/verify/checks.ts';
import { MIGRATION_CONNECTIONS, processConnections } from '../../services/core/config/connections.ts';
import { loadConfig } from '../../services/core/config/load.ts';
import { freePort } from '../../services/core/db/embedded.ts';
import { migrate } from '../../services/core/migrate/migrate.ts';
import { LOAD_MIX_ENDPOINTS, LOAD_MIX_TARGETS } from '../support/load-mix-endpoints.ts';
import { runHookgate } from '../support/process.ts';
import { INSTALL_EFFECTS } from '../support/worker-effects.ts';
import { Supervised } from './chaos.ts';

export async function waitUntil(
  what: string,
  check: () => Promise<boolean>,
  timeoutMs: number,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (await check().catch(() => false)) return;
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await sleep(200);
  }
}

/** hookgate's schema and pg-boss's, plus the test-only effect counter (worker-effects.ts). */
export async function prepareDatabase(url: string): Promise<void> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    await migrate(client, url);
    await client.query(INSTALL_EFFECTS);
  } finally {
    await client.end();
  }
}

/**
 * The most connections a fleet of `gateways` and `workers` opens with this configuration (the
 * sizing guide's formula, services/core/config/connections.ts), plus a migration and the run's own
 * checks: what a PgBouncer pool in front of it must hold (load/README.md, "Connections").
 */
export function fleetConnections(configFile: string, gateways: number, workers: number): number {
  const config = loadConfig(configFile);
  return (
    gateways * processConnections(config, 'gateway') +
    workers * processConnections(config, 'worker') +
    MIGRATION_CONNECTIONS +
    4
  );
}

export interface Fleet {
  readonly gatewayPorts: readonly number[];
  readonly processes: readonly Supervised[];
  allServing(): boolean;
  stop(): Promise<void>;
}

export interface FleetOptions {
  /** DATABASE_URL of every process (PostgreSQL directly, or PgBouncer). */
  readonly url: string;
  readonly configFile: string;
  readonly gateways: number;
  readonly workers: number;
  readonly env?: Readonly<Record<string, string>>;
  readonly log: (line: string) => void;
}

/** Starts the fleet and waits until every process says it is serving. */
export async function startFleet(options: FleetOptions): Promise<Fleet> {
  const env = { DATABASE_URL: options.url, METRICS_PORT: '0', LOG_LEVEL: 'info', ...options.env };
  const gatewayPorts: number[] = [];
  const processes: Supervised[] = [];
  for (let i = 0; i < options.gateways; i += 1) {
    const port = await freePort();
    gatewayPorts.push(port);
    processes.push(
      new Supervised(
        'gateway',
        `gateway-${i}`,
        ['serve', '--role', 'gateway', '--config', options.configFile],
        { ...env, PORT: String(port) },
        options.log,
      ),
    );
  }
  for (let i = 0; i < options.workers; i += 1) {
    processes.push(
      new Supervised(
        'worker',
        `worker-${i}`,
        ['serve', '--role', 'worker', '--config', options.configFile],
        { ...env, PORT: '0' },
        options.log,
      ),
    );
  }
  const fleet: Fleet = {
    gatewayPorts,
    processes,
    allServing: () => processes.every((p) => p.serving),
    async stop() {
      const stopped = await Promise.allSettled(processes.map((p) => p.stop()));
      const failed = stopped.find((s) => s.status === 'rejected');
      if (failed?.status === 'rejected') throw failed.reason;
    },
  };
  for (const p of processes) p.start();
  try {
    await waitUntil('every process serving', async () => fleet.allServing(), 120_000);
  } catch (error) {
    const tails = processes
      .map((p) => `${p.name}: ${p.current?.output().trim().split('\n').slice(-5).join('\n  ')}`)
      .join('\n');
    await fleet.stop().catch(() => {});
    throw new Error(`${(error as Error).message}\n${tails}`);
  }
  return fleet;
}

export interface LoadRun {
  /** Every request, answered or not, in the order answers came. */
  readonly answers: readonly DriverAnswer[];
  readonly results: readonly DriverResult[];
  /** One JSON line per acknowledged delivery, for `hookgate verify --sent`. */
  readonly files: readonly string[];
}

export interface LoadOptions {
  readonly ports: readonly number[];
  /** Arrivals per second over all gateways. */
  readonly rate: number;
  readonly seconds: number;
  readonly dir: string;
  readonly runId: string;
  /** Longer than any bound the gateway promises, so a held connection shows as a slow answer. */
  readonly requestTimeoutMs?: number;
  /**
   * Connections per gateway. Providers open one per delivery in flight; with fewer, requests
   * queue in the driver while the gateway holds the rest, and their wait is the driver's, not
   * the gateway's. Default: enough for every request in flight for 15 s at the rate.
   */
  readonly connections?: number;
}

/** The load mix (unique events, later and concurrent duplicates) spread evenly over the gateways. */
export function startLoad(options: LoadOptions): {
  readonly answers: DriverAnswer[];
  readonly done: Promise<LoadRun>;
} {
  const answers: DriverAnswer[] = [];
  const files = options.ports.map((_, i) => join(options.dir, `sent-${options.runId}-${i}.jsonl`));
  const startedAt = Math.floor(Date.now() / 1000);
  const done = Promise.all(
    options.ports.map(
      (port, i): Promise<DriverResult> =>
        drive({
          baseUrl: `http://127.0.0.1:${port}`,
          targets: LOAD_MIX_TARGETS,
          rate: options.rate / options.ports.length,
          seconds: options.seconds,
          connections:
            options.connections ?? Math.max(32, Math.ceil((options.rate / options.ports.length) * 15)),
          maxInFlight: 4_000,
          requestTimeoutMs: options.requestTimeoutMs ?? 30_000,
          mix: DEFAULT_MIX,
          run: { id: `${options.runId}g${i}`, startedAt },
          recordTo: files[i]!,
          onAnswer: (answer) => answers.push(answer),
        }),
    ),
  ).then((results) => ({ answers, results, files }));
  return { answers, done };
}

export interface FaultWindow {
  /** Requests answered (any status) between the fault's start and its end. */
  readonly answered: number;
  readonly statuses: Readonly<Record<string, number>>;
  /** 503s answered during the fault. */
  readonly answered503: number;
  /** 2xx answered during the fault to requests sent after it began. */
  readonly acceptedDuring: number;
  /** Longest any request sent during the fault waited for its answer (or for giving up), ms. */
  readonly slowestMs: number;
  /** Requests sent during the fault that got no HTTP answer at all. */
  readonly unanswered: number;
}

export function tally(answers: readonly DriverAnswer[]): Record<string, number> {
  const out: Record<string, number> = {};
  for (const a of answers) {
    const key = a.status === null ? 'none' : String(a.status);
    out[key] = (out[key] ?? 0) + 1;
  }
  return out;
}

export function faultWindow(answers: readonly DriverAnswer[], from: number, to: number): FaultWindow {
  const answeredIn = answers.filter((a) => a.status !== null && a.answeredAt >= from && a.answeredAt <= to);
  const sentIn = answers.filter((a) => a.sentAt >= from && a.sentAt <= to);
  return {
    answered: answeredIn.length,
    statuses: tally(answeredIn),
    answered503: answeredIn.filter((a) => a.status === 503).length,
    acceptedDuring: answeredIn.filter((a) => a.sentAt >= from && a.status !== null && a.status < 300).length,
    slowestMs: sentIn.reduce((max, a) => Math.max(max, a.answeredAt - a.sentAt), 0),
    unanswered: sentIn.filter((a) => a.status === null).length,
  };
}

/**
 * Milliseconds from `since` to the first 2xx of a request sent at or after it (null: none): how
 * long the fleet took to accept again, measured from outside, as a provider sees it.
 */
export function timeToAccept(answers: readonly DriverAnswer[], since: number): number | null {
  let first: number | null = null;
  for (const a of answers) {
    if (a.sentAt >= since && a.status !== null && a.status >= 200 && a.status < 300) {
      if (first === null || a.answeredAt < first) first = a.answeredAt;
    }
  }
  return first === null ? null : first - since;
}

export interface Settlement {
  readonly drainSeconds: number;
  readonly acknowledged: number;
  /** Acknowledged deliveries verify found missing or unsettled (its violations). */
  readonly lost: number;
  /** Events whose business write committed more than once (the effect counter). */
  readonly doubled: number;
  readonly pending: number;
  readonly verify: VerifyReport;
}

const PENDING = `SELECT count(*)::int AS n FROM hookgate.inbox WHERE status = 'pending' AND endpoint = ANY($1)`;
const DOUBLED = `SELECT count(*)::int AS n FROM (
  SELECT 1 FROM public.effects GROUP BY endpoint, event_id HAVING count(*) > 1) d`;

/**
 * Waits for the backlog to drain (on `url`, the database as it is now: after a failover, the
 * promoted standby), then runs the real `hookgate verify` over every acknowledged delivery.
 */
export async function settle(options: {
  readonly url: string;
  readonly configFile: string;
  readonly dir: string;
  readonly load: LoadRun;
  readonly drainTimeoutMs: number;
}): Promise<Settlement> {
  const admin = new pg.Pool({ connectionString: options.url, max: 1 });
  admin.on('error', () => {});
  try {
    const started = Date.now();
    const pending = async (): Promise<number> =>
      (await admin.query<{ n: number }>(PENDING, [LOAD_MIX_ENDPOINTS])).rows[0]!.n;
    await waitUntil('the backlog to drain', async () => (await pending()) === 0, options.drainTimeoutMs);
    const drainSeconds = (Date.now() - started) / 1000;
    const sentFile = join(options.dir, `sent-all-${Date.now()}.jsonl`);
    writeFileSync(sentFile, options.load.files.map((f) => readFileSync(f, 'utf8')).join(''));
    const run = await runHookgate(['verify', '--sent', sentFile, '--config', options.configFile, '--json'], {
      env: { DATABASE_URL: options.url, LOG_LEVEL: 'warn' },
    });
    const verify = JSON.parse(run.output.trim().split('\n').at(-1)!) as VerifyReport;
    return {
      drainSeconds,
      acknowledged: options.load.results.reduce((n, r) => n + r.acked, 0),
      lost: verify.violationCount,
      doubled: (await admin.query<{ n: number }>(DOUBLED)).rows[0]!.n,
      pending: await pending(),
      verify,
    };
  } finally {
    await admin.end();
  }
}
