// The capacity scenario: the figures a capacity planner needs (docs/performance.md), each from a
// phase that reuses another scenario's measuring code on a fresh database of its own, so that no
// phase's rows or backlog weigh on the next:
//   gateway       ingest's closed loop (bench/ingest.ts), one round: deliveries per gateway core
//   apply         apply's backlog drain (bench/apply.ts): events applied per worker core
//   saturation    apply's end-to-end phase offered more than it can carry: events/s carried
//   levels        the same at 25, 50 and 80 % of that saturation: latency, connections seen
//   target        the same at a fixed rate (2 000/s for 60 s by default): p99, CPU per event, verify
//   wal, bytes    bench/wal.ts (no prefill) and bench/bytes.ts: WAL, data pages, bytes retained
//   destinations  bench/destinations.ts and bench/buses.ts: each destination type's cost
// The machine (CPU, memory, disk, PostgreSQL's settings) is read at run time.
//   BENCH_SCENARIOS=capacity BENCH_MAJORS=18 node bench/run.ts
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { availableParallelism, cpus, loadavg, totalmem } from 'node:os';
import pg from 'pg';
import { processConnections } from '../services/core/config/connections.ts';
import { parseConfig } from '../services/core/config/load.ts';
import {
  type ApplySettings,
  applyScenario,
  configDocument,
  type EndToEndResult,
  endToEndScenario,
} from './apply.ts';
import { busesScenario } from './buses.ts';
import { bytesScenario } from './bytes.ts';
import { type CapacitySummary, LEVELS, type Machine, ROWS, renderCapacityPage } from './capacity-table.ts';
import { destinationsScenario } from './destinations.ts';
import { ingestScenario } from './ingest.ts';
import { type BenchDatabase, benchDatabase } from './processes.ts';
import { walScenario } from './wal.ts';

export interface CapacitySettings {
  readonly connections: number;
  readonly ingestSeconds: number;
  readonly applyEvents: number;
  readonly overloadRate: number;
  readonly overloadSeconds: number;
  readonly levelSeconds: number;
  /** 0 skips the target run. */
  readonly targetRate: number;
  readonly targetSeconds: number;
  readonly walRate: number;
  readonly walSeconds: number;
  readonly bytesArrivals: number;
  readonly destinationEvents: number;
}

export interface CapacityReport extends CapacitySummary {
  readonly settings: CapacitySettings;
  /** Every phase's own report, whole. */
  readonly phases: Readonly<Record<string, unknown>>;
}

/** What `make bench`'s other scenarios run with: 2 workers of 2 apply loops, batches of 100. */
const WORKERS = 2;

/** PostgreSQL settings that move these figures. */
const SETTINGS = [
  'shared_buffers',
  'effective_cache_size',
  'work_mem',
  'max_connections',
  'synchronous_commit',
  'fsync',
  'wal_level',
  'full_page_writes',
  'wal_compression',
  'checkpoint_timeout',
  'max_wal_size',
  'autovacuum',
];

function run(command: string, args: readonly string[]): string {
  try {
    return execFileSync(command, args, { encoding: 'utf8' }).trim();
  } catch {
    return '';
  }
}

/** The block device and filesystem under a directory, as the kernel describes them. */
function diskOf(directory: string): string {
  const [source = '?', fstype = '?'] = run('findmnt', [
    '-n',
    '-o',
    'SOURCE,FSTYPE',
    '--target',
    directory,
  ]).split(/\s+/);
  const device = source.replace(/^\/dev\//, '').replace(/p?\d+$/, '');
  const read = (path: string) => {
    try {
      return readFileSync(`/sys/block/${device}/${path}`, 'utf8').trim();
    } catch {
      return '';
    }
  };
  const sectors = Number(read('size'));
  const driver =
    run('readlink', ['-f', `/sys/block/${device}/device/driver`])
      .split('/')
      .pop() ?? '';
  const size = sectors > 0 ? `${((sectors * 512) / 1024 ** 3).toFixed(0)} GiB` : '? GiB';
  const rotational = read('queue/rotational') === '1' ? 'reported rotational' : 'reported non-rotational';
  return `${source} (${[driver, size, fstype, rotational].filter(Boolean).join(', ')})`;
}

function cpuMHz(): number {
  const match = /cpu MHz\s*:\s*([\d.]+)/.exec(run('cat', ['/proc/cpuinfo']));
  return match ? Number(match[1]) : (cpus()[0]?.speed ?? Number.NaN);
}

async function readMachine(url: string): Promise<Machine> {
  const db = new pg.Client({ connectionString: url, application_name: 'bench-capacity' });
  await db.connect();
  try {
    const version = (await db.query<{ v: string }>("SELECT current_setting('server_version') AS v")).rows[0]!
      .v;
    const settings = await db.query<{ name: string; setting: string }>(
      'SELECT name, current_setting(name) AS setting FROM unnest($1::text[]) AS name',
      [SETTINGS],
    );
    // Not readable by every role; the disk is then the one of the working directory.
    const dataDirectory = await db
      .query<{ v: string }>("SELECT current_setting('data_directory') AS v")
      .then((r) => r.rows[0]!.v)
      .catch(() => process.cwd());
    return {
      cores: availableParallelism(),
      cpuModel: cpus()[0]?.model.trim() ?? '?',
      cpuMHz: cpuMHz(),
      memoryGiB: totalmem() / 1024 ** 3,
      disk: diskOf(dataDirectory),
      postgres: {
        version: version.split(' ')[0]!,
        settings: Object.fromEntries(settings.rows.map((r) => [r.name, r.setting])),
      },
    };
  } finally {
    await db.end();
  }
}

/** Peak connections per application_name while `work` runs (pg_stat_activity every 200 ms). */
async function peakConnections<T>(
  url: string,
  work: Promise<T>,
): Promise<{ result: T; peak: Record<string, number> }> {
  const db = new pg.Client({ connectionString: url, application_name: 'bench-capacity' });
  await db.connect();
  const peak: Record<string, number> = {};
  let done = false;
  const sampler = (async () => {
    while (!done) {
      const { rows } = await db.query<{ name: string; n: number }>(
        `SELECT application_name AS name, count(*)::int AS n FROM pg_stat_activity
          WHERE application_name LIKE 'hookgate-%' GROUP BY 1`,
      );
      for (const r of rows) peak[r.name] = Math.max(peak[r.name] ?? 0, r.n);
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
  })();
  try {
    return { result: await work, peak };
  } finally {
    done = true;
    await sampler;
    await db.end();
  }
}

const roleSum = (peak: Readonly<Record<string, number>>, role: string) =>
  (peak[`hookgate-${role}`] ?? 0) + (peak[`hookgate-${role}-queue`] ?? 0);

const sum = (record: Readonly<Record<string, number>>) => Object.values(record).reduce((a, b) => a + b, 0);

export async function capacityScenario(
  database: BenchDatabase,
  major: 15 | 18,
  settings: CapacitySettings,
): Promise<CapacityReport> {
  const startedAt = new Date().toISOString();
  const loads = [loadavg()[0]!];
  const phases: Record<string, unknown> = {};
  const figures: Record<string, number> = {};
  /**
   * A phase on a fresh database of its own (the first on the one run.ts made). A phase that fails
   * is kept as its error, and its rows are n/a: one broken phase does not cost the others' figures.
   */
  let given: BenchDatabase | null = database;
  const phase = async <T>(
    name: string,
    work: (db: BenchDatabase) => Promise<T>,
    figuresOf: (report: T) => Record<string, number>,
  ): Promise<T | null> => {
    const owned = given === null;
    const db = given ?? (await benchDatabase(major));
    given = null;
    try {
      const report = await work(db);
      phases[name] = report;
      Object.assign(figures, figuresOf(report));
      return report;
    } catch (error) {
      phases[name] = { error: error instanceof Error ? error.message : String(error) };
      process.stderr.write(`capacity: the ${name} phase failed: ${String(error)}\n`);
      return null;
    } finally {
      if (owned) await db.stop();
      loads.push(loadavg()[0]!);
    }
  };
  const machine = await readMachine(database.url);

  await phase(
    'gateway',
    (db) =>
      ingestScenario(db, { connections: settings.connections, seconds: settings.ingestSeconds, rounds: 1 }),
    (ingest) => {
      const gateway = ingest.gateway[0]!;
      return {
        'gateway.perCore': 1000 / (gateway.cpuPer1k.process ?? Number.NaN),
        'gateway.rate': gateway.okPerSecond,
        'gateway.postgresCpu': gateway.cpuPer1k.postgres ?? Number.NaN,
      };
    },
  );
  const applySettings: ApplySettings = {
    events: settings.applyEvents,
    workers: WORKERS,
    concurrency: 2,
    batchSize: 100,
    pollingIntervalMs: 500,
    rate: 0,
    seconds: settings.levelSeconds,
    connections: settings.connections,
  };
  await phase(
    'apply',
    (db) => applyScenario(db, applySettings),
    (apply) => ({
      'apply.perCore': 1000 / (apply.hookgate.cpu.per1k.worker ?? Number.NaN),
      'apply.rate': apply.hookgate.perSecond,
      'apply.postgresCpu': apply.hookgate.cpu.per1k.postgres ?? Number.NaN,
    }),
  );
  const e2e = (db: BenchDatabase, rate: number, seconds: number) =>
    endToEndScenario(db, { ...applySettings, rate, seconds });
  const saturation = await phase(
    'saturation',
    (db) => e2e(db, settings.overloadRate, settings.overloadSeconds),
    (s) => ({ 'saturation.rate': s.processedRate, 'saturation.offered': s.achievedRate }),
  );
  const config = parseConfig(configDocument(applySettings), {});
  figures['connections.gateway'] = processConnections(config, 'gateway');
  figures['connections.worker'] = processConnections(config, 'worker');
  figures['connections.console'] = processConnections(config, 'console');
  for (const share of LEVELS) {
    if (!saturation) break;
    const rate = Math.max(1, Math.round((saturation.processedRate * share) / 100));
    const latency = (e: EndToEndResult) => ({
      [`e2e${share}.rate`]: e.achievedRate,
      [`e2e${share}.p50`]: e.p50Ms,
      [`e2e${share}.p99`]: e.p99Ms,
      [`e2e${share}.ackP50`]: e.load.ackP50Ms,
      [`e2e${share}.ackP99`]: e.load.ackP99Ms,
    });
    if (share !== 50) {
      await phase(`e2e${share}`, (db) => e2e(db, rate, settings.levelSeconds), latency);
      continue;
    }
    await phase(
      `e2e${share}`,
      async (db) => {
        const { result, peak } = await peakConnections(db.url, e2e(db, rate, settings.levelSeconds));
        return { ...result, connectionsSeen: peak };
      },
      (e) => ({
        ...latency(e),
        'e2e.postgresCpu': e.cpu.per1k.postgres ?? Number.NaN,
        'connections.gatewaySeen': roleSum(e.connectionsSeen, 'gateway'),
        'connections.workersSeen': roleSum(e.connectionsSeen, 'worker'),
      }),
    );
  }
  if (settings.targetRate > 0) {
    await phase(
      'target',
      (db) => e2e(db, settings.targetRate, settings.targetSeconds),
      (target) => ({
        'target.rate': target.achievedRate,
        'target.carried': target.processedRate,
        'target.p50': target.p50Ms,
        'target.p99': target.p99Ms,
        'target.ackP99': target.load.ackP99Ms,
        'target.failures': target.load.non2xx + target.load.errors + target.load.dropped,
        'target.unsettled': target.events - target.settled,
        'target.violations': target.verify.violationCount,
        'target.cpuMs': sum(target.cpu.per1k),
        'target.gatewayMs': target.cpu.per1k.gateway ?? Number.NaN,
        'target.workerMs': target.cpu.per1k.worker ?? Number.NaN,
        'target.postgresMs': target.cpu.per1k.postgres ?? Number.NaN,
      }),
    );
  }
  const perThousandEvents = (bytesPerEvent: number) => (bytesPerEvent * 1000) / 1e6;
  await phase(
    'wal',
    (db) =>
      walScenario(db, {
        rate: settings.walRate,
        seconds: settings.walSeconds,
        workers: WORKERS,
        connections: settings.connections,
        prefill: 0,
      }),
    (wal) => {
      const measured = wal.phases[0]!;
      const dataPerEvent = (measured.dataPagesWritten * 8192) / measured.events;
      return {
        'wal.walMB': perThousandEvents(measured.walBytesPerEvent),
        'wal.dataMB': perThousandEvents(dataPerEvent),
        'wal.diskMB': perThousandEvents(measured.walBytesPerEvent + dataPerEvent),
      };
    },
  );
  await phase(
    'bytes',
    (db) =>
      bytesScenario(db, {
        arrivals: settings.bytesArrivals,
        rate: 400,
        connections: settings.connections,
        raw: false,
        payloadSearch: false,
      }),
    (bytes) => {
      const hookgateTables = bytes.marginal.filter((r) => !r.table.startsWith('billing.'));
      const retained = hookgateTables.reduce((total, r) => total + r.total, 0);
      const jobs = hookgateTables
        .filter((r) => r.table.startsWith('pgboss.'))
        .reduce((total, r) => total + r.total, 0);
      return {
        'bytes.retained': retained,
        'bytes.retainedWithoutJobs': retained - jobs,
        'bytes.payload': bytes.payloadPerEvent,
      };
    },
  );
  await phase(
    'destinations',
    (db) =>
      destinationsScenario(db, {
        events: settings.destinationEvents,
        destinations: 1,
        concurrency: 16,
        entities: 100,
        ratePerSecond: 100,
        rateSeconds: 5,
      }),
    (destinations) => ({
      'http.relayUs': destinations.relay.cpuMicrosPerDelivery,
      'http.postgresUs': destinations.relay.postgresMicrosPerDelivery,
      'http.rate': destinations.relay.perSecond,
    }),
  );
  await phase(
    'buses',
    (db) => busesScenario(db, { events: settings.destinationEvents, concurrency: 16 }),
    // buses.ts's cpuMsPer1000 is milliseconds per 1 000 messages: microseconds per message.
    (buses) => ({
      'nats.relayUs': buses.nats.relay.cpuMsPer1000,
      'nats.rate': buses.nats.relay.perSecond,
      'rabbitmq.relayUs': buses.rabbitmq.relay.cpuMsPer1000,
      'rabbitmq.rate': buses.rabbitmq.relay.perSecond,
    }),
  );
  // A row the table has and this run did not measure is there as null (n/a), never missing.
  const complete = Object.fromEntries(ROWS.map((row) => [row.key, figures[row.key] ?? null]));
  return {
    scenario: 'capacity',
    major,
    startedAt,
    finishedAt: new Date().toISOString(),
    machine,
    loadAverage: { start: loads[0]!, highest: Math.max(...loads), end: loads.at(-1)! },
    settings,
    figures: complete,
    phases,
  };
}

/** The lines run.ts prints: the page's tables for this one run. */
export function renderCapacity(report: CapacityReport): string[] {
  return renderCapacityPage([report]).split('\n').slice(1, -1);
}
