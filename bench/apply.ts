// The apply scenario: how fast hookgate's workers settle a backlog of billing events, against
// the hand-rolled one-transaction-per-event SKIP LOCKED worker (bench/baseline-worker.ts)
// running the same billing handler on the same events, in this same run; then the end-to-end
// latency (received → processed) with the gateway taking signed Stripe deliveries at a fixed rate.
import type { ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { availableParallelism, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { stringify } from 'yaml';
import { type DriverResult, drive as driveArrivals } from '../load/driver/driver.ts';
import { DEFAULT_MIX } from '../load/lib/mix.ts';
import { verifyRun } from '../services/cli/verify/checks.ts';
import { readSentFile } from '../services/cli/verify/sent-file.ts';
import { parseConfig } from '../services/core/config/load.ts';
import { freePort } from '../services/core/db/embedded.ts';
import { createPool } from '../services/core/db/pool.ts';
import { type Claim, claimBatch } from '../services/core/inbox/claim.ts';
import { createStripeProvider } from '../services/core/providers/stripe.ts';
import { createBoss } from '../services/core/queue/boss.ts';
import { ensureQueues, retryPolicyFrom } from '../services/core/queue/queues.ts';
import { cpuWindow, perThousand, postgresCpu, postmasterPid, processCpu } from './cpu.ts';
import { type BenchDatabase, startProcess, stopProcess } from './processes.ts';

const SECRET = 'whsec_bench_apply_5b7c0d1e2f3a4b5c6d7e8f90';
const ENDPOINT = 'billing';

export interface ApplySettings {
  /** Events in the drained backlog (each side drains the same events). */
  readonly events: number;
  /** Worker processes, for hookgate and for the baseline alike. */
  readonly workers: number;
  /** Apply loops per worker process (`worker.concurrency`); the baseline runs as many. */
  readonly concurrency: number;
  readonly batchSize: number;
  readonly pollingIntervalMs: number;
  /** Arrival rate of the end-to-end phase, deliveries/s; 0 skips the phase. */
  readonly rate: number;
  /** Length of the end-to-end phase's measured load. */
  readonly seconds: number;
  readonly connections: number;
}

/** CPU seconds per process over a phase, and the same per 1 000 events (or deliveries). */
export interface CpuCost {
  readonly seconds: Readonly<Record<string, number>>;
  readonly per1k: Readonly<Record<string, number>>;
  /** What `per1k` counts. */
  readonly unit: string;
}

export interface DrainResult {
  readonly events: number;
  /** Wall time from the first settled event to the last (polled every 25 ms). */
  readonly seconds: number;
  readonly perSecond: number;
  /** From the rows' own timestamps: events / (last settle − first settle). */
  readonly dbWindowPerSecond: number;
  /** From spawning the processes to the last settled event, startup included. */
  readonly wallSecondsFromSpawn: number;
  readonly outcomes: Readonly<Record<string, number>>;
  readonly ledgerEntries: number;
  readonly invoices: Readonly<Record<string, number>>;
  /** Worker processes (summed) and PostgreSQL, from their readiness to the last settled event. */
  readonly cpu: CpuCost;
}

export interface EndToEndResult {
  readonly targetRate: number;
  /** hookgate's load driver: evenly spaced arrivals, the k6 scripts' mix. */
  readonly load: DriverResult;
  readonly mix: string;
  /** Arrivals/s the driver achieved. */
  readonly achievedRate: number;
  /** Accepted events / (last received_at − first received_at). */
  readonly receivedRate: number;
  /**
   * Settled events / (last processed_at − first received_at): what gateway and workers carried
   * end to end. Offered more than they can take, it is the stack's saturation.
   */
  readonly processedRate: number;
  readonly reached: boolean;
  readonly events: number;
  readonly settled: number;
  readonly p50Ms: number;
  readonly p99Ms: number;
  readonly maxMs: number;
  /** Worker histogram (received → apply committed): share of events at or under 0.5 s. */
  readonly committedWithin500ms: number;
  /** Gateway, workers and PostgreSQL over the load and its drain, per 1 000 events. */
  readonly cpu: CpuCost;
  /**
   * pg-boss job rows hookgate wrote during the measured load and its drain, by queue kind
   * (`apply`), and all of them per accepted event.
   */
  readonly jobs: { readonly byKind: Readonly<Record<string, number>>; readonly perEvent: number };
  /** `hookgate verify` over the acknowledged deliveries after the drain. */
  readonly verify: {
    readonly ok: boolean;
    readonly violationCount: number;
    readonly uniquePayments: number;
    readonly ledgerEntries: number;
  };
}

export interface ApplyReport {
  readonly scenario: 'apply';
  readonly settings: ApplySettings;
  readonly mix: string;
  readonly hookgate: DrainResult;
  readonly baseline: DrainResult;
  readonly ratio: number;
  readonly endToEnd: EndToEndResult | null;
  /** 1-minute load average at the start and the end: how busy the machine was. */
  readonly loadAverage: { readonly start: number; readonly end: number };
}

/** The apply ratio the performance issue asks for. */
export const APPLY_GOAL = 6;

const MIX =
  'per 10 events: 4 invoice.created + 4 invoice.paid (distinct invoices), 1 invoice.voided, 1 charge.succeeded';

interface BenchEvent {
  readonly id: string;
  readonly type: string;
  readonly body: string;
}

/** Stripe-shaped billing events, none of which needs the network to apply. */
function billingEvents(prefix: string, count: number): BenchEvent[] {
  const created = Math.floor(Date.now() / 1000);
  const events: BenchEvent[] = [];
  const event = (n: number, type: string, object: Record<string, unknown>) => {
    const id = `evt_${prefix}_${n}`;
    events.push({
      id,
      type,
      body: JSON.stringify({
        id,
        object: 'event',
        api_version: '2025-01-27.acacia',
        created,
        livemode: false,
        pending_webhooks: 1,
        type,
        data: { object },
      }),
    });
  };
  for (let n = 0; events.length < count; n += 1) {
    const slot = n % 10;
    const group = Math.floor(n / 10);
    const customer = `cus_${group % 997}`;
    if (slot < 8) {
      const invoice = `in_${prefix}_${group}_${slot >> 1}`;
      const paid = slot % 2 === 1;
      event(n, paid ? 'invoice.paid' : 'invoice.created', {
        id: invoice,
        object: 'invoice',
        customer,
        status: paid ? 'paid' : 'open',
        currency: 'eur',
        amount_due: 4200 + group,
        amount_paid: paid ? 4200 + group : 0,
        status_transitions: { paid_at: paid ? created : null, voided_at: null },
      });
    } else if (slot === 8) {
      event(n, 'invoice.voided', {
        id: `in_${prefix}_${group}_void`,
        object: 'invoice',
        customer,
        status: 'void',
        currency: 'eur',
        amount_due: 900,
        amount_paid: 0,
        status_transitions: { paid_at: null, voided_at: created },
      });
    } else {
      event(n, 'charge.succeeded', { id: `ch_${prefix}_${group}`, object: 'charge', customer, amount: 4200 });
    }
  }
  return events;
}

export function configDocument(settings: ApplySettings): Record<string, unknown> {
  return {
    worker: {
      batchSize: settings.batchSize,
      concurrency: settings.concurrency,
      pollingInterval: `${settings.pollingIntervalMs}ms`,
    },
    endpoints: { [ENDPOINT]: { provider: 'stripe', secrets: [SECRET], handler: 'billing' } },
  };
}

/** Inbox rows and their jobs, written by hookgate's own claim path (as the gateway would). */
async function preloadInbox(url: string, configFile: Record<string, unknown>, events: readonly BenchEvent[]) {
  const config = parseConfig(configFile, {});
  const pool = createPool({
    connectionString: url,
    max: 4,
    statementTimeoutMs: 60_000,
    connectTimeoutMs: 10_000,
    applicationName: 'bench-preload',
  });
  const boss = createBoss({
    connectionString: url,
    max: 2,
    supervise: false,
    applicationName: 'bench-preload',
  });
  boss.on('error', () => {});
  await boss.start();
  try {
    await ensureQueues(boss, [ENDPOINT], retryPolicyFrom(config.worker));
    const provider = createStripeProvider();
    const claims: Claim[] = events.map((e) => {
      const identified = provider.identify({ headers: {}, body: JSON.parse(e.body) });
      if (!identified.ok || !('event' in identified)) throw new Error(`cannot identify ${e.id}`);
      return {
        endpoint: ENDPOINT,
        provider: 'stripe',
        event: identified.event,
        body: e.body,
        traceparent: null,
      };
    });
    const chunk = config.claim.maxBatch;
    let next = 0;
    const lane = async () => {
      for (;;) {
        const start = next;
        next += chunk;
        if (start >= claims.length) return;
        const results = await claimBatch(pool, boss, claims.slice(start, start + chunk));
        const failed = results.find((r) => !r.ok);
        if (failed && !failed.ok) throw failed.error;
      }
    };
    await Promise.all([lane(), lane(), lane()]);
  } finally {
    await boss.stop({ graceful: false, close: true });
    await pool.end();
  }
}

const BASELINE_SCHEMA = `
  DROP SCHEMA IF EXISTS bench_baseline CASCADE;
  CREATE SCHEMA bench_baseline;
  CREATE TABLE bench_baseline.queue (
    id          bigserial PRIMARY KEY,
    endpoint    text        NOT NULL,
    event_id    text        NOT NULL,
    event_type  text        NOT NULL,
    payload     jsonb       NOT NULL,
    received_at timestamptz NOT NULL DEFAULT now(),
    done        boolean     NOT NULL DEFAULT false,
    done_at     timestamptz,
    error       text,
    UNIQUE (endpoint, event_id)
  );
  CREATE INDEX queue_todo_idx ON bench_baseline.queue (id) WHERE NOT done;`;

async function preloadBaseline(db: pg.Client, events: readonly BenchEvent[]): Promise<void> {
  await db.query(BASELINE_SCHEMA);
  for (let i = 0; i < events.length; i += 2_000) {
    const slice = events.slice(i, i + 2_000);
    await db.query(
      `INSERT INTO bench_baseline.queue (endpoint, event_id, event_type, payload)
       SELECT $1, e, t, p::jsonb FROM unnest($2::text[], $3::text[], $4::text[]) AS u(e, t, p)`,
      [ENDPOINT, slice.map((e) => e.id), slice.map((e) => e.type), slice.map((e) => e.body)],
    );
  }
}

/** Same starting point for both sides: empty billing tables, fresh statistics, a checkpoint. */
async function resetBilling(db: pg.Client): Promise<void> {
  await db.query('TRUNCATE billing.ledger_entries, billing.invoices, billing.subscriptions CASCADE');
  await db.query('VACUUM ANALYZE');
  await db.query('CHECKPOINT');
}

/** Polls `remaining` until it is 0; times the span from the first settled event to the last. */
async function timeDrain(
  remaining: () => Promise<number>,
  total: number,
  spawnedAt: number,
  timeoutMs: number,
): Promise<{ seconds: number; events: number; wallSecondsFromSpawn: number }> {
  let firstAt = 0;
  let firstRemaining = total;
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const left = await remaining();
    const now = performance.now();
    if (!firstAt && left < total) {
      firstAt = now;
      firstRemaining = left;
    }
    if (left === 0) {
      return {
        seconds: (now - firstAt) / 1000,
        events: firstRemaining,
        wallSecondsFromSpawn: (now - spawnedAt) / 1000,
      };
    }
    if (Date.now() > deadline) throw new Error(`drain timed out with ${left} of ${total} events left`);
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}

async function billingCounts(db: pg.Client) {
  const ledger = await db.query<{ n: number }>('SELECT count(*)::int AS n FROM billing.ledger_entries');
  const invoices = await db.query<{ status: string; n: number }>(
    'SELECT status, count(*)::int AS n FROM billing.invoices GROUP BY status ORDER BY status',
  );
  return {
    ledgerEntries: ledger.rows[0]?.n ?? 0,
    invoices: Object.fromEntries(invoices.rows.map((r) => [r.status, r.n])),
  };
}

/** BENCH_WORKER_NODE_OPTIONS (e.g. `--cpu-prof`) go to the hookgate worker processes only. */
function workerArgs(configFile: string): string[] {
  return [
    ...(process.env.BENCH_WORKER_NODE_OPTIONS?.split(' ').filter(Boolean) ?? []),
    'services/cli/main.ts',
    'serve',
    '--role',
    'worker',
    '--config',
    configFile,
  ];
}

async function startWorkers(
  count: number,
  configFile: string,
  url: string,
  metricsPorts: number[] = [],
): Promise<ChildProcess[]> {
  const started = await Promise.allSettled(
    Array.from({ length: count }, async (_, i) =>
      startProcess(
        workerArgs(configFile),
        {
          DATABASE_URL: url,
          PORT: '0',
          METRICS_PORT: String(metricsPorts[i] ?? 0),
          LOG_LEVEL: process.env.BENCH_LOG_LEVEL ?? 'info',
        },
        /hookgate is serving/,
      ),
    ),
  );
  const children = started.flatMap((s) => (s.status === 'fulfilled' ? [s.value] : []));
  const failure = started.find((s) => s.status === 'rejected');
  if (failure) {
    await Promise.all(children.map(stopProcess));
    throw failure.reason;
  }
  return children;
}

async function drainHookgate(
  db: pg.Client,
  url: string,
  configFile: string,
  settings: ApplySettings,
): Promise<DrainResult> {
  const spawnedAt = performance.now();
  const workers = await startWorkers(settings.workers, configFile, url);
  const postmaster = await postmasterPid(db);
  const window = cpuWindow({
    worker: () => workers.reduce((sum, w) => sum + processCpu(w.pid), 0),
    postgres: () => postgresCpu(postmaster),
  });
  let timing: Awaited<ReturnType<typeof timeDrain>>;
  let cpu: Record<string, number>;
  try {
    timing = await timeDrain(
      async () =>
        (
          await db.query<{ n: number }>(
            `SELECT count(*)::int AS n FROM hookgate.inbox WHERE endpoint = $1 AND status = 'pending'`,
            [ENDPOINT],
          )
        ).rows[0]!.n,
      settings.events,
      spawnedAt,
      300_000,
    );
    cpu = window();
  } finally {
    await Promise.all(workers.map(stopProcess));
  }
  const dbWindow = await db.query<{ seconds: number }>(
    `SELECT extract(epoch FROM max(processed_at) - min(processed_at))::float8 AS seconds
       FROM hookgate.inbox WHERE endpoint = $1`,
    [ENDPOINT],
  );
  const outcomes = await db.query<{ status: string; n: number }>(
    'SELECT status, count(*)::int AS n FROM hookgate.inbox WHERE endpoint = $1 GROUP BY status ORDER BY status',
    [ENDPOINT],
  );
  return {
    events: timing.events,
    seconds: timing.seconds,
    perSecond: timing.events / timing.seconds,
    dbWindowPerSecond: settings.events / dbWindow.rows[0]!.seconds,
    wallSecondsFromSpawn: timing.wallSecondsFromSpawn,
    outcomes: Object.fromEntries(outcomes.rows.map((r) => [r.status, r.n])),
    ...(await billingCounts(db)),
    cpu: { seconds: cpu, per1k: perThousand(cpu, settings.events), unit: 'events applied' },
  };
}

async function drainBaseline(db: pg.Client, url: string, settings: ApplySettings): Promise<DrainResult> {
  const spawnedAt = performance.now();
  const started = await Promise.allSettled(
    Array.from({ length: settings.workers }, () =>
      startProcess(
        ['bench/baseline-worker.ts'],
        {
          DATABASE_URL: url,
          BASELINE_CONCURRENCY: String(settings.concurrency),
          BASELINE_ENDPOINT: ENDPOINT,
        },
        /baseline worker ready/,
      ),
    ),
  );
  const workers = started.flatMap((s) => (s.status === 'fulfilled' ? [s.value] : []));
  const postmaster = await postmasterPid(db);
  const cpuSince = cpuWindow({
    worker: () => workers.reduce((sum, w) => sum + processCpu(w.pid), 0),
    postgres: () => postgresCpu(postmaster),
  });
  let timing: Awaited<ReturnType<typeof timeDrain>>;
  let cpu: Record<string, number>;
  try {
    const failure = started.find((s) => s.status === 'rejected');
    if (failure) throw failure.reason;
    timing = await timeDrain(
      async () =>
        (await db.query<{ n: number }>('SELECT count(*)::int AS n FROM bench_baseline.queue WHERE NOT done'))
          .rows[0]!.n,
      settings.events,
      spawnedAt,
      600_000,
    );
    cpu = cpuSince();
  } finally {
    await Promise.all(workers.map(stopProcess));
  }
  const window = await db.query<{ seconds: number }>(
    'SELECT extract(epoch FROM max(done_at) - min(done_at))::float8 AS seconds FROM bench_baseline.queue',
  );
  const outcomes = await db.query<{ outcome: string; n: number }>(
    `SELECT CASE WHEN error IS NULL THEN 'done' ELSE 'failed' END AS outcome, count(*)::int AS n
       FROM bench_baseline.queue GROUP BY 1 ORDER BY 1`,
  );
  return {
    events: timing.events,
    seconds: timing.seconds,
    perSecond: timing.events / timing.seconds,
    dbWindowPerSecond: settings.events / window.rows[0]!.seconds,
    wallSecondsFromSpawn: timing.wallSecondsFromSpawn,
    outcomes: Object.fromEntries(outcomes.rows.map((r) => [r.outcome, r.n])),
    ...(await billingCounts(db)),
    cpu: { seconds: cpu, per1k: perThousand(cpu, settings.events), unit: 'events applied' },
  };
}

/** Share of observations at or under `le` seconds in a Prometheus histogram, summed over targets. */
function shareWithin(metricsTexts: readonly string[], le: string): number {
  let within = 0;
  let count = 0;
  for (const text of metricsTexts) {
    const bucket = new RegExp(`hookgate_end_to_end_seconds_bucket\\{[^}]*le="${le}"[^}]*\\} (\\S+)`).exec(
      text,
    );
    const total = /hookgate_end_to_end_seconds_count\{[^}]*\} (\S+)/.exec(text);
    within += Number(bucket?.[1] ?? 0);
    count += Number(total?.[1] ?? 0);
  }
  return count === 0 ? Number.NaN : within / count;
}

async function endToEnd(
  db: pg.Client,
  url: string,
  configFile: string,
  settings: ApplySettings,
): Promise<EndToEndResult> {
  const metricsPorts = await Promise.all(Array.from({ length: settings.workers }, () => freePort()));
  const gatewayPort = await freePort();
  const gatewayMetrics = await freePort();
  const children: ChildProcess[] = [];
  try {
    children.push(
      await startProcess(
        ['services/cli/main.ts', 'serve', '--role', 'gateway', '--config', configFile],
        {
          DATABASE_URL: url,
          PORT: String(gatewayPort),
          METRICS_PORT: String(gatewayMetrics),
          LOG_LEVEL: process.env.BENCH_LOG_LEVEL ?? 'info',
        },
        `http://127.0.0.1:${gatewayPort}/readyz`,
      ),
    );
    children.push(...(await startWorkers(settings.workers, configFile, url, metricsPorts)));
    const sentFile = join(tmpdir(), `hookgate-bench-e2e-${process.pid}.jsonl`);
    const arrivals = (runId: string, seconds: number, recordTo?: string) =>
      driveArrivals({
        baseUrl: `http://127.0.0.1:${gatewayPort}`,
        targets: [{ endpoint: ENDPOINT, provider: 'stripe', secret: SECRET }],
        rate: settings.rate,
        seconds,
        connections: settings.connections,
        maxInFlight: 10_000,
        requestTimeoutMs: 10_000,
        mix: DEFAULT_MIX,
        run: { id: runId, startedAt: Math.floor(Date.now() / 1000) },
        ...(recordTo ? { recordTo } : {}),
      });
    // Warm up (JIT, pools) at the same rate on events that are not measured.
    await arrivals('warm', 2);
    const gateway = children[0]!;
    const workers = children.slice(1);
    const postmaster = await postmasterPid(db);
    const cpuSince = cpuWindow({
      gateway: () => processCpu(gateway.pid),
      worker: () => workers.reduce((sum, w) => sum + processCpu(w.pid), 0),
      postgres: () => postgresCpu(postmaster),
    });
    const jobsFrom = (await db.query<{ now: Date }>('SELECT now() AS now')).rows[0]!.now;
    const load = await arrivals('e2e', settings.seconds, sentFile);
    const pending = () =>
      db
        .query<{ n: number }>(
          `SELECT count(*)::int AS n FROM hookgate.inbox
            WHERE endpoint = $1 AND status = 'pending' AND event_id LIKE 'evt\\_e2e\\_%'`,
          [ENDPOINT],
        )
        .then((r) => r.rows[0]!.n);
    const deadline = Date.now() + 120_000;
    while ((await pending()) > 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));
    const cpu = cpuSince();
    const verifyPool = new pg.Pool({ connectionString: url, max: 1 });
    const verified = await verifyRun(verifyPool, await readSentFile(sentFile), {
      billing: new Set([ENDPOINT]),
      project: new Map(),
    }).finally(() => {
      rmSync(sentFile, { force: true });
      return verifyPool.end();
    });
    const stats = await db.query<{
      events: number;
      settled: number;
      p50: number | null;
      p99: number | null;
      max: number | null;
      received_seconds: number | null;
      span_seconds: number | null;
    }>(
      `SELECT count(*)::int AS events,
              count(processed_at)::int AS settled,
              percentile_cont(0.5) WITHIN GROUP (ORDER BY ms) AS p50,
              percentile_cont(0.99) WITHIN GROUP (ORDER BY ms) AS p99,
              max(ms) AS max,
              extract(epoch FROM max(received_at) - min(received_at))::float8 AS received_seconds,
              extract(epoch FROM max(processed_at) - min(received_at))::float8 AS span_seconds
         FROM (SELECT received_at, processed_at,
                      extract(epoch FROM processed_at - received_at)::float8 * 1000 AS ms
                 FROM hookgate.inbox
                WHERE endpoint = $1 AND event_id LIKE 'evt\\_e2e\\_%') AS e`,
      [ENDPOINT],
    );
    const metrics = await Promise.all(
      metricsPorts.map(async (port) => (await fetch(`http://127.0.0.1:${port}/metrics`)).text()),
    );
    const row = stats.rows[0]!;
    // Jobs are kept for worker.completedJobRetention (30 minutes) after they finish: every job of
    // the window is still in the table.
    const jobs = await db.query<{ kind: string; n: number }>(
      `SELECT split_part(name, '.', 2) AS kind, count(*)::int AS n
         FROM pgboss.job WHERE name LIKE 'hookgate.%' AND created_on >= $1 GROUP BY 1 ORDER BY 1`,
      [jobsFrom],
    );
    const jobsWritten = jobs.rows.reduce((sum, r) => sum + r.n, 0);
    const achievedRate = load.achievedRate;
    return {
      targetRate: settings.rate,
      load,
      mix: `Stripe billing mix of load/lib/mix.ts: ${DEFAULT_MIX.laterDuplicates * 100}% re-sent later, ${DEFAULT_MIX.concurrentDuplicates * 100}% sent twice at once`,
      achievedRate,
      receivedRate: row.received_seconds ? row.events / row.received_seconds : Number.NaN,
      processedRate: row.span_seconds ? row.settled / row.span_seconds : Number.NaN,
      reached: achievedRate >= settings.rate * 0.95 && load.dropped === 0,
      events: row.events,
      settled: row.settled,
      p50Ms: row.p50 ?? Number.NaN,
      p99Ms: row.p99 ?? Number.NaN,
      maxMs: row.max ?? Number.NaN,
      // The warm-up events are in the histogram too; they were applied under the same load.
      committedWithin500ms: shareWithin(metrics, '0.5'),
      jobs: {
        byKind: Object.fromEntries(jobs.rows.map((r) => [r.kind, r.n])),
        perEvent: row.events === 0 ? Number.NaN : jobsWritten / row.events,
      },
      verify: {
        ok: verified.ok,
        violationCount: verified.violationCount,
        uniquePayments: verified.payments.unique,
        ledgerEntries: verified.payments.booked,
      },
      cpu: { seconds: cpu, per1k: perThousand(cpu, row.events), unit: 'events accepted' },
    };
  } finally {
    await Promise.all(children.map(stopProcess));
  }
}

/**
 * The end-to-end phase alone (gateway + workers, evenly spaced signed arrivals) on an unused
 * database: bench/capacity.ts runs it at several rates, one database each.
 */
export async function endToEndScenario(
  database: BenchDatabase,
  settings: ApplySettings,
): Promise<EndToEndResult> {
  const dir = mkdtempSync(join(tmpdir(), 'hookgate-bench-e2e-'));
  const configFile = join(dir, 'hookgate.yaml');
  writeFileSync(configFile, stringify(configDocument(settings)));
  const db = new pg.Client({ connectionString: database.url, application_name: 'bench-apply' });
  await db.connect();
  try {
    return await endToEnd(db, database.url, configFile, settings);
  } finally {
    await db.end();
    rmSync(dir, { recursive: true, force: true });
  }
}

export async function applyScenario(database: BenchDatabase, settings: ApplySettings): Promise<ApplyReport> {
  const loadAtStart = loadavg()[0]!;
  const dir = mkdtempSync(join(tmpdir(), 'hookgate-bench-apply-'));
  const configFile = join(dir, 'hookgate.yaml');
  const document = configDocument(settings);
  writeFileSync(configFile, stringify(document));
  const db = new pg.Client({ connectionString: database.url, application_name: 'bench-apply' });
  await db.connect();
  try {
    const used = await db.query<{ used: boolean }>(
      `SELECT EXISTS (SELECT 1 FROM billing.invoices) OR EXISTS (SELECT 1 FROM hookgate.inbox WHERE endpoint = $1) AS used`,
      [ENDPOINT],
    );
    if (used.rows[0]?.used) {
      throw new Error(
        'the apply scenario truncates billing.* and counts hookgate.inbox rows: it needs an unused database (unset DATABASE_URL for a throwaway embedded PostgreSQL)',
      );
    }
    const events = billingEvents('drain', settings.events);
    await preloadInbox(database.url, document, events);
    await preloadBaseline(db, events);

    // The baseline first: both sides start from empty billing tables.
    await resetBilling(db);
    const baseline = await drainBaseline(db, database.url, settings);
    await resetBilling(db);
    const hookgate = await drainHookgate(db, database.url, configFile, settings);
    const endToEndResult = settings.rate > 0 ? await endToEnd(db, database.url, configFile, settings) : null;
    return {
      scenario: 'apply',
      settings,
      mix: MIX,
      hookgate,
      baseline,
      ratio: hookgate.perSecond / baseline.perSecond,
      endToEnd: endToEndResult,
      loadAverage: { start: loadAtStart, end: loadavg()[0]! },
    };
  } finally {
    await db.end();
    rmSync(dir, { recursive: true, force: true });
  }
}

const fmt = (n: number, digits = 0) => n.toFixed(digits).padStart(9);
const cpuLine = (cpu: CpuCost) =>
  Object.entries(cpu.per1k)
    .map(([name, value]) => `${name} ${value.toFixed(3)}`)
    .join(', ');
const counts = (record: Readonly<Record<string, number>>) =>
  Object.entries(record)
    .map(([k, v]) => `${k}=${v}`)
    .join(' ');

export function renderApply(report: ApplyReport): string[] {
  const s = report.settings;
  const row = (label: string, r: DrainResult) =>
    `  ${label}${fmt(r.perSecond)} ${fmt(r.dbWindowPerSecond)} ${fmt(r.seconds, 2)} ${fmt(r.wallSecondsFromSpawn, 2)}   ${counts(r.outcomes)}; ledger=${r.ledgerEntries}`;
  const lines = [
    `apply: drain ${s.events} billing events, ${s.workers} worker processes x ${s.concurrency} loops, batchSize ${s.batchSize}, pollingInterval ${s.pollingIntervalMs}ms`,
    `  mix: ${report.mix}`,
    '  worker                 applied/s  db-window  drain s  from spawn s   outcomes',
    row('baseline (1 tx/event)', report.baseline),
    row('hookgate             ', report.hookgate),
    `  CPU s per 1k events: baseline ${cpuLine(report.baseline.cpu)}; hookgate ${cpuLine(report.hookgate.cpu)}`,
    `  ratio (hookgate applied/s / baseline applied/s): ${report.ratio.toFixed(2)}   (goal >= ${APPLY_GOAL})`,
  ];
  const machine = `  machine: ${report.settings.workers} worker processes + PostgreSQL on ${availableParallelism()} cores; load average ${report.loadAverage.start.toFixed(1)} at start, ${report.loadAverage.end.toFixed(1)} at end`;
  const e = report.endToEnd;
  if (e) {
    lines.push(
      `  end to end at ${e.targetRate}/s for ${s.seconds}s (evenly spaced arrivals, ${s.connections} connections, ${e.mix}, gateway + ${s.workers} workers):`,
      `    arrival: ${e.achievedRate.toFixed(0)} arrivals/s, ${e.load.acked} acknowledged (received ${e.receivedRate.toFixed(0)} events/s) — target ${e.reached ? 'reached' : 'NOT reached'}; ack p50 ${e.load.ackP50Ms.toFixed(1)} ms p99 ${e.load.ackP99Ms.toFixed(1)} ms; non-2xx ${e.load.non2xx} errors ${e.load.errors} dropped ${e.load.dropped}`,
      `    received → processed: p50 ${e.p50Ms.toFixed(0)} ms  p99 ${e.p99Ms.toFixed(0)} ms  max ${e.maxMs.toFixed(0)} ms  (${e.settled}/${e.events} settled; goal p99 <= 500 ms)`,
      `    worker histogram (received → committed): ${(e.committedWithin500ms * 100).toFixed(1)}% within 0.5 s`,
      `    CPU s per 1k events accepted: ${cpuLine(e.cpu)} (all: ${Object.values(e.cpu.per1k)
        .reduce((sum, v) => sum + v, 0)
        .toFixed(3)} ms per event; goal <= 0.8)`,
      `    pg-boss jobs written: ${counts(e.jobs.byKind)}, ${e.jobs.perEvent.toFixed(3)} per accepted event (goal <= 0.1)`,
      `    hookgate verify: ${e.verify.ok ? 'OK' : `FAILED, ${e.verify.violationCount} violations`} (${e.verify.uniquePayments} unique payments sent, ${e.verify.ledgerEntries} in the ledger)`,
    );
  }
  lines.push(machine);
  return lines;
}
