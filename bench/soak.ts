// The soak scenario: does storage stay flat at a steady rate? Signed Stripe billing deliveries
// arrive at a constant rate (the load driver) through a gateway and a worker for several minutes,
// with every retention window shortened to minutes: pg-boss deletes finished jobs after
// `completedJobRetention` (its maintenance running every `maintenanceInterval`), and this process
// prunes the inbox and the delivery records every `pruneEvery`. Table and index sizes and dead
// tuples are sampled throughout; once the first retention cycle has passed they should level off.

import { availableParallelism, loadavg } from 'node:os';
import { setTimeout as sleep } from 'node:timers/promises';
import pg from 'pg';
import { type DriverResult, drive } from '../load/driver/driver.ts';
import { DEFAULT_MIX } from '../load/lib/mix.ts';
import { DEFAULT_DEDUPE_HORIZON_MS } from '../services/core/config/dedupe-schema.ts';
import { prune } from '../services/core/retention/prune.ts';
import type { BenchDatabase } from './processes.ts';
import { tableSizes } from './sizes.ts';
import { startStack } from './stack.ts';

const SECRET = 'whsec_bench_soak_5b7c0d1e2f3a4b5c6d7e8f90';
const ENDPOINT = 'billing';

export interface SoakSettings {
  readonly rate: number;
  readonly seconds: number;
  readonly connections: number;
  /** Inbox and delivery-record retention, seconds. */
  readonly retentionSeconds: number;
  /** Finished-job retention, seconds. */
  readonly jobRetentionSeconds: number;
  readonly maintenanceSeconds: number;
  readonly pruneEverySeconds: number;
  readonly sampleEverySeconds: number;
}

/** The tables retention manages, grouped as an operator reads them. */
const GROUPS = {
  inbox: (t: string) => t === 'hookgate.inbox',
  destination_deliveries: (t: string) => t === 'hookgate.destination_deliveries',
  'pgboss.job': (t: string) => /^pgboss\.job/.test(t),
} as const;
type Group = keyof typeof GROUPS;

export interface SoakSample {
  readonly atSeconds: number;
  readonly inboxRows: number;
  /** The backlog: accepted and not yet applied. */
  readonly pendingRows: number;
  readonly jobs: number;
  readonly jobStates: Readonly<Record<string, number>>;
  /** How long ago the oldest completed job still present finished (retention keeping up?). */
  readonly oldestCompletedJobSeconds: number | null;
  /** Per group: total bytes (heap + TOAST + indexes), index bytes, dead tuples. */
  readonly groups: Readonly<Record<Group, { total: number; indexes: number; dead: number; live: number }>>;
  readonly autovacuums: number;
}

export interface Level {
  readonly firstCycle: number;
  readonly middle: number;
  readonly end: number;
  /** end / middle - 1 */
  readonly growthSecondHalf: number;
  readonly maxDead: number;
}

export interface SoakReport {
  readonly scenario: 'soak';
  readonly settings: SoakSettings;
  readonly load: DriverResult;
  readonly samples: readonly SoakSample[];
  readonly prunes: { readonly runs: number; readonly inboxRows: number; readonly deliveries: number };
  /** Per group: size at the end of the first cycle, at the middle of the rest, at the end. */
  readonly levels: Readonly<
    Record<
      Group,
      { firstCycle: number; middle: number; end: number; growthSecondHalf: number; maxDead: number }
    >
  >;
  readonly firstCycleSeconds: number;
  readonly loadAverage: { readonly start: number; readonly end: number };
}

async function sample(db: pg.Pool, at: number): Promise<SoakSample> {
  const sizes = await tableSizes(db, ['hookgate', 'pgboss']);
  const groups = {} as Record<Group, { total: number; indexes: number; dead: number; live: number }>;
  for (const [group, matches] of Object.entries(GROUPS) as [Group, (t: string) => boolean][]) {
    const mine = sizes.filter((s) => matches(s.table));
    groups[group] = {
      total: mine.reduce((n, s) => n + s.total, 0),
      indexes: mine.reduce((n, s) => n + s.indexes, 0),
      dead: mine.reduce((n, s) => n + s.deadTuples, 0),
      live: mine.reduce((n, s) => n + s.liveTuples, 0),
    };
  }
  const counts = await db.query<{ inbox: number; jobs: number; pending: number; oldest: number | null }>(
    `SELECT (SELECT count(*) FROM hookgate.inbox)::int AS inbox,
            (SELECT count(*) FROM hookgate.inbox WHERE status = 'pending')::int AS pending,
            (SELECT count(*) FROM pgboss.job WHERE name LIKE 'hookgate.%')::int AS jobs,
            (SELECT extract(epoch FROM now() - min(completed_on))::float8 FROM pgboss.job
              WHERE name LIKE 'hookgate.%' AND state = 'completed') AS oldest`,
  );
  const states = await db.query<{ state: string; n: number }>(
    `SELECT state::text, count(*)::int AS n FROM pgboss.job WHERE name LIKE 'hookgate.%' GROUP BY 1`,
  );
  return {
    atSeconds: at,
    inboxRows: counts.rows[0]!.inbox,
    pendingRows: counts.rows[0]!.pending,
    jobs: counts.rows[0]!.jobs,
    jobStates: Object.fromEntries(states.rows.map((r) => [r.state, r.n])),
    oldestCompletedJobSeconds: counts.rows[0]!.oldest,
    groups,
    autovacuums: sizes.reduce((n, s) => n + s.autovacuumCount, 0),
  };
}

/** The sample closest to `at` seconds. */
function near(samples: readonly SoakSample[], at: number): SoakSample {
  return samples.reduce((best, s) => (Math.abs(s.atSeconds - at) < Math.abs(best.atSeconds - at) ? s : best));
}

export async function soakScenario(database: BenchDatabase, settings: SoakSettings): Promise<SoakReport> {
  const loadAtStart = loadavg()[0]!;
  const db = new pg.Pool({ connectionString: database.url, max: 3, application_name: 'bench-soak' });
  const retention = `${settings.jobRetentionSeconds}s`;
  const stack = await startStack(
    database.url,
    {
      worker: {
        pollingInterval: '200ms',
        completedJobRetention: retention,
        maintenanceInterval: `${settings.maintenanceSeconds}s`,
        superviseInterval: '5s',
      },
      endpoints: { [ENDPOINT]: { provider: 'stripe', secrets: [SECRET], handler: 'billing' } },
    },
    1,
  );
  const samples: SoakSample[] = [];
  const prunes = { runs: 0, inboxRows: 0, deliveries: 0 };
  const started = performance.now();
  const elapsed = () => (performance.now() - started) / 1000;
  let running = true;
  try {
    const sampler = (async () => {
      while (running) {
        samples.push(await sample(db, elapsed()));
        await sleep(settings.sampleEverySeconds * 1000);
      }
    })();
    const pruner = (async () => {
      while (running) {
        await sleep(settings.pruneEverySeconds * 1000);
        if (!running) return;
        const report = await prune(db, {
          actor: 'bench',
          inboxOlderThanMs: settings.retentionSeconds * 1000,
          dedupe: { now: new Date(), horizonMs: DEFAULT_DEDUPE_HORIZON_MS },
          deliveriesOlderThanMs: settings.retentionSeconds * 1000,
          chunk: 5_000,
        });
        prunes.runs += 1;
        prunes.inboxRows += report.inboxRows;
        prunes.deliveries += report.destinationDeliveries;
      }
    })();
    let load: DriverResult;
    try {
      load = await drive({
        baseUrl: stack.gatewayUrl,
        targets: [{ endpoint: ENDPOINT, provider: 'stripe', secret: SECRET }],
        rate: settings.rate,
        seconds: settings.seconds,
        connections: settings.connections,
        maxInFlight: 10_000,
        requestTimeoutMs: 10_000,
        mix: DEFAULT_MIX,
        run: { id: 'soak', startedAt: Math.floor(Date.now() / 1000) },
      });
    } finally {
      running = false;
      await Promise.all([sampler, pruner]);
    }
    samples.push(await sample(db, elapsed()));
    // One cycle: a row outlives its window, then waits at most one prune interval; a job
    // outlives its window, then waits at most one maintenance interval.
    const firstCycleSeconds = Math.max(
      settings.retentionSeconds + settings.pruneEverySeconds,
      settings.jobRetentionSeconds + settings.maintenanceSeconds,
    );
    const end = samples[samples.length - 1]!;
    const first = near(samples, firstCycleSeconds);
    const middle = near(samples, (firstCycleSeconds + end.atSeconds) / 2);
    const levels = {} as Record<Group, Level>;
    for (const group of Object.keys(GROUPS) as Group[]) {
      levels[group] = {
        firstCycle: first.groups[group].total,
        middle: middle.groups[group].total,
        end: end.groups[group].total,
        growthSecondHalf: end.groups[group].total / middle.groups[group].total - 1,
        maxDead: Math.max(...samples.map((s) => s.groups[group].dead)),
      };
    }
    return {
      scenario: 'soak',
      settings,
      load,
      samples,
      prunes,
      levels,
      firstCycleSeconds,
      loadAverage: { start: loadAtStart, end: loadavg()[0]! },
    };
  } finally {
    await stack.stop();
    await db.end();
  }
}

const mb = (bytes: number) => (bytes / 1024 ** 2).toFixed(2).padStart(7);

export function renderSoak(report: SoakReport): string[] {
  const s = report.settings;
  const groups = Object.keys(GROUPS) as Group[];
  const lines = [
    `soak: ${s.rate}/s Stripe billing deliveries for ${s.seconds}s (gateway + 1 worker), inbox and delivery records pruned every ${s.pruneEverySeconds}s past ${s.retentionSeconds}s, finished jobs deleted ${s.jobRetentionSeconds}s after they finish (maintenance every ${s.maintenanceSeconds}s)`,
    `  load: ${report.load.achievedRate.toFixed(0)} arrivals/s, ${report.load.acked} acknowledged, ack p99 ${report.load.ackP99Ms.toFixed(1)} ms; non-2xx ${report.load.non2xx} errors ${report.load.errors} dropped ${report.load.dropped}`,
    `  prune: ${report.prunes.runs} runs deleted ${report.prunes.inboxRows} inbox rows and ${report.prunes.deliveries} delivery records`,
    `  MB over time (total incl. indexes; dead tuples in brackets); first cycle ends at ${report.firstCycleSeconds}s`,
    `     t s  inbox rows  pending    jobs  oldest completed s ${groups.map((g) => g.padStart(24)).join('')}`,
  ];
  for (const sample of report.samples) {
    lines.push(
      `  ${sample.atSeconds.toFixed(0).padStart(6)}  ${String(sample.inboxRows).padStart(10)}  ${String(sample.pendingRows).padStart(7)}  ${String(sample.jobs).padStart(6)}  ${(sample.oldestCompletedJobSeconds?.toFixed(0) ?? '-').padStart(18)} ${groups
        .map((g) =>
          `${mb(sample.groups[g].total)} MB [${String(sample.groups[g].dead).padStart(7)}]`.padStart(24),
        )
        .join('')}`,
    );
  }
  for (const g of groups) {
    const l = report.levels[g];
    lines.push(
      `  ${g}: ${mb(l.firstCycle)} MB after the first cycle, ${mb(l.middle)} MB midway, ${mb(l.end)} MB at the end: ${(l.growthSecondHalf * 100).toFixed(1)}% over the second half; dead tuples at most ${l.maxDead}`,
    );
  }
  lines.push(
    `  jobs by state at the end: ${Object.entries(report.samples[report.samples.length - 1]?.jobStates ?? {})
      .map(([state, n]) => `${state}=${n}`)
      .join(' ')}`,
    `  autovacuum runs on these tables: ${report.samples[report.samples.length - 1]?.autovacuums ?? 0}`,
    `  machine: ${availableParallelism()} cores; load average ${report.loadAverage.start.toFixed(1)} at start, ${report.loadAverage.end.toFixed(1)} at end`,
  );
  return lines;
}
