// `make bench`: every figure is a ratio against a baseline measured in this same run, on this
// same machine, with the same load generator. Absolute numbers are printed for context only.
// BENCH_SCENARIOS=ingest,apply,claim,pgbench,bytes,layout,wal,prune,partitions,soak,longrun,console,destinations,buses,api,capacity picks scenarios (default: all) and
// BENCH_MAJORS=18,15 the PostgreSQL majors each runs on (default both: the embedded 18 and a throwaway
// cluster of Debian's 15). Each writes bench/results/<scenario>.json on 18 and <scenario>-pg15.json on 15
// (every figure), and the matching .md (the printed summary).
import { mkdirSync, writeFileSync } from 'node:fs';
import { availableParallelism, loadavg } from 'node:os';
import { join } from 'node:path';
import { z } from 'zod';
import { apiListsScenario, renderApiLists } from './api-lists.ts';
import { type ApplyReport, applyScenario, renderApply } from './apply.ts';
import { busesScenario, renderBuses } from './buses.ts';
import { type BytesReport, bytesScenario, renderBytes } from './bytes.ts';
import { capacityScenario, renderCapacity } from './capacity.ts';
import { claimScenario, renderClaim } from './claim.ts';
import { consoleSearchScenario, renderConsoleSearch } from './console-search.ts';
import { destinationsScenario, renderDestinations } from './destinations.ts';
import { type IngestReport, ingestScenario, renderIngest } from './ingest.ts';
import { layoutScenario, renderLayout } from './layout.ts';
import { longrunScenario, renderLongrun } from './longrun.ts';
import { partitionsScenario, renderPartitions } from './partitions.ts';
import { pgbenchScenario, renderPgbench } from './pgbench.ts';
import { type BenchDatabase, benchDatabase, ROOT } from './processes.ts';
import { pruneScenario, renderPrune } from './prune.ts';
import { renderSoak, soakScenario } from './soak.ts';
import { renderSummary } from './summary.ts';
import { renderWal, walScenario } from './wal.ts';

/** A comma-separated list of whole numbers, each within [min, max]. */
const numberList = (fallback: string, min: number, max: number) =>
  z
    .string()
    .default(fallback)
    .transform((text) => text.split(',').map(Number))
    .pipe(z.array(z.number().int().min(min).max(max)).min(1));

const settings = z
  .object({
    BENCH_SECONDS: z.coerce.number().int().min(2).max(300).default(10),
    BENCH_CONNECTIONS: z.coerce.number().int().min(1).max(1024).default(64),
    BENCH_ROUNDS: z.coerce.number().int().min(1).max(10).default(3),
    BENCH_SCENARIOS: z
      .string()
      .default(
        'ingest,apply,claim,pgbench,bytes,layout,wal,prune,partitions,soak,longrun,console,destinations,buses,api,capacity',
      ),
    BENCH_MAJORS: z
      .string()
      .default('18,15')
      .transform((text) => text.split(',').map((major) => Number(major.trim())))
      .pipe(z.array(z.union([z.literal(15), z.literal(18)])).min(1)),
    /** longrun: the inbox size past which the last window is measured, window length, most windows. */
    BENCH_LONGRUN_ROWS: z.coerce.number().int().min(1_000).max(10_000_000).default(100_000),
    BENCH_LONGRUN_WINDOW: z.coerce.number().int().min(2).max(300).default(10),
    BENCH_LONGRUN_WINDOWS: z.coerce.number().int().min(2).max(1_000).default(60),
    /** apply: backlog size drained by each side, worker processes and their loops. */
    BENCH_APPLY_EVENTS: z.coerce.number().int().min(100).max(1_000_000).default(10_000),
    BENCH_APPLY_WORKERS: z.coerce.number().int().min(1).max(16).default(2),
    BENCH_APPLY_CONCURRENCY: z.coerce.number().int().min(1).max(16).default(2),
    BENCH_APPLY_BATCH: z.coerce.number().int().min(1).max(500).default(100),
    BENCH_APPLY_POLLING_MS: z.coerce.number().int().min(100).max(60_000).default(500),
    /** apply: arrival rate (deliveries/s) of the end-to-end phase and its length; rate 0 skips it. */
    BENCH_APPLY_RATE: z.coerce.number().int().min(0).max(100_000).default(2_000),
    BENCH_APPLY_E2E_SECONDS: z.coerce.number().int().min(2).max(3_600).default(60),
    /** pgbench: seconds per run, client connections, claim batch sizes. */
    BENCH_PGBENCH_SECONDS: z.coerce.number().int().min(2).max(600).default(10),
    /** claim: seconds per batch size, connections, batch sizes. */
    BENCH_CLAIM_SECONDS: z.coerce.number().int().min(2).max(600).default(8),
    BENCH_CLAIM_CONNECTIONS: z.coerce.number().int().min(1).max(64).default(4),
    BENCH_CLAIM_BATCHES: numberList('1,25,100', 1, 1_000),
    BENCH_PGBENCH_CLIENTS: z.coerce.number().int().min(1).max(256).default(4),
    BENCH_PGBENCH_BATCHES: numberList('1,20,100', 1, 1_000),
    /** bytes: arrivals sent (duplicates included) and their rate. */
    BENCH_BYTES_ARRIVALS: z.coerce.number().int().min(100).max(1_000_000).default(6_000),
    BENCH_BYTES_RATE: z.coerce.number().int().min(10).max(10_000).default(400),
    /** bytes: 1 gives the endpoint a `body: raw` destination, to measure hookgate.inbox_raw per event. */
    BENCH_BYTES_RAW: z.enum(['0', '1']).default('0'),
    /** bytes: 1 gives the endpoint `payloadSearch: true` (the console's payload index holds its rows). */
    BENCH_BYTES_PAYLOAD_SEARCH: z.enum(['0', '1']).default('0'),
    /** layout: inbox rows per storage variant, and the rows of each insert-settle-vacuum round. */
    BENCH_LAYOUT_ROWS: z.coerce.number().int().min(1_000).max(10_000_000).default(100_000),
    BENCH_LAYOUT_ROUND: z.coerce.number().int().min(100).max(1_000_000).default(10_000),
    /** wal: arrival rate and seconds of load, worker processes. */
    BENCH_WAL_RATE: z.coerce.number().int().min(10).max(10_000).default(300),
    BENCH_WAL_SECONDS: z.coerce.number().int().min(5).max(3_600).default(30),
    BENCH_WAL_WORKERS: z.coerce.number().int().min(1).max(16).default(2),
    /** wal: inbox rows written before the steady-state phases (0 skips them). */
    BENCH_WAL_PREFILL: z.coerce.number().int().min(0).max(100_000_000).default(1_000_000),
    /** prune: inbox sizes to fill (comma-separated), rows per batch, ingest rate alongside (0 skips). */
    BENCH_PRUNE_ROWS: numberList('1000000,10000000', 1_000, 100_000_000),
    BENCH_PRUNE_BATCH: z.coerce.number().int().min(1).max(100_000).default(5_000),
    BENCH_PRUNE_RATE: z.coerce.number().int().min(0).max(10_000).default(300),
    BENCH_PRUNE_PAUSE_MS: z.coerce.number().int().min(0).max(10_000).default(100),
    /** partitions: inbox sizes (comma-separated, whole partitions), rows in each partition, rows per batch. */
    BENCH_PARTITION_ROWS: numberList('10000000,100000000', 1_000, 1_000_000_000),
    BENCH_PARTITION_EACH: z.coerce.number().int().min(1_000).max(100_000_000).default(1_000_000),
    BENCH_PARTITION_BATCH: z.coerce.number().int().min(1).max(100_000).default(5_000),
    /** partitions: claim load (claims/s, connections, seconds per window; rate 0 skips it). */
    BENCH_PARTITION_RATE: z.coerce.number().int().min(0).max(10_000).default(50),
    BENCH_PARTITION_CONNECTIONS: z.coerce.number().int().min(1).max(64).default(4),
    BENCH_PARTITION_SECONDS: z.coerce.number().int().min(2).max(300).default(20),
    /** partitions: a size is skipped when its build would pass this many GB or seconds. */
    BENCH_PARTITION_MAX_GB: z.coerce.number().min(0.1).max(1_000).default(25),
    BENCH_PARTITION_MAX_BUILD_S: z.coerce.number().int().min(10).max(86_400).default(900),
    /** soak: steady rate and duration; retention windows (seconds) shortened to minutes. */
    BENCH_SOAK_RATE: z.coerce.number().int().min(1).max(10_000).default(200),
    BENCH_SOAK_SECONDS: z.coerce.number().int().min(60).max(7_200).default(480),
    BENCH_SOAK_RETENTION: z.coerce.number().int().min(10).max(86_400).default(120),
    BENCH_SOAK_JOB_RETENTION: z.coerce.number().int().min(1).max(86_400).default(60),
    BENCH_SOAK_MAINTENANCE: z.coerce.number().int().min(1).max(86_400).default(30),
    BENCH_SOAK_PRUNE_EVERY: z.coerce.number().int().min(1).max(86_400).default(30),
    /** console: inbox sizes searched (comma-separated, smallest first) and searches of each kind per size. */
    BENCH_CONSOLE_ROWS: numberList('10000,1000000', 1_000, 100_000_000),
    BENCH_CONSOLE_RUNS: z.coerce.number().int().min(1).max(1_000).default(20),
    /** console: 0 runs every endpoint without `payloadSearch` (payload searches then read by time). */
    BENCH_CONSOLE_PAYLOAD_SEARCH: z.enum(['0', '1']).default('1'),
    /** api: inbox rows under the management API's lists, and requests of each route. */
    BENCH_API_ROWS: z.coerce.number().int().min(1_000).max(100_000_000).default(1_000_000),
    BENCH_API_RUNS: z.coerce.number().int().min(1).max(1_000).default(20),
    /** destinations: events in the backlog, destinations each goes to, deliveries in flight per destination. */
    BENCH_DEST_EVENTS: z.coerce.number().int().min(100).max(1_000_000).default(5_000),
    BENCH_DEST_DESTINATIONS: z.coerce.number().int().min(1).max(50).default(2),
    BENCH_DEST_CONCURRENCY: z.coerce.number().int().min(1).max(64).default(16),
    /** destinations: entities of the ordered/unordered comparison; the rate-limited destination's limit and seconds. */
    BENCH_DEST_ENTITIES: z.coerce.number().int().min(1).max(1_000_000).default(500),
    BENCH_DEST_RATE: z.coerce.number().min(1).max(10_000).default(100),
    BENCH_DEST_RATE_SECONDS: z.coerce.number().int().min(5).max(600).default(20),
    /** buses: messages published to each bus (by the relay and by the bare client), and in flight. */
    BENCH_BUS_EVENTS: z.coerce.number().int().min(100).max(1_000_000).default(5_000),
    BENCH_BUS_CONCURRENCY: z.coerce.number().int().min(1).max(64).default(16),
    /** capacity (docs/performance.md): each phase's length; a target rate of 0 skips the target run. */
    BENCH_CAPACITY_INGEST_SECONDS: z.coerce.number().int().min(2).max(300).default(10),
    BENCH_CAPACITY_APPLY_EVENTS: z.coerce.number().int().min(100).max(1_000_000).default(5_000),
    BENCH_CAPACITY_OVERLOAD_RATE: z.coerce.number().int().min(10).max(100_000).default(3_000),
    BENCH_CAPACITY_OVERLOAD_SECONDS: z.coerce.number().int().min(2).max(600).default(30),
    BENCH_CAPACITY_LEVEL_SECONDS: z.coerce.number().int().min(2).max(3_600).default(15),
    BENCH_CAPACITY_TARGET_RATE: z.coerce.number().int().min(0).max(100_000).default(2_000),
    BENCH_CAPACITY_TARGET_SECONDS: z.coerce.number().int().min(2).max(3_600).default(60),
    BENCH_CAPACITY_WAL_RATE: z.coerce.number().int().min(10).max(10_000).default(300),
    BENCH_CAPACITY_WAL_SECONDS: z.coerce.number().int().min(5).max(3_600).default(20),
    BENCH_CAPACITY_BYTES_ARRIVALS: z.coerce.number().int().min(100).max(1_000_000).default(3_000),
    BENCH_CAPACITY_DEST_EVENTS: z.coerce.number().int().min(100).max(1_000_000).default(2_000),
  })
  .parse(process.env);

export interface Scenario {
  readonly name: string;
  /** Runs against a fresh migrated database of that major; returns the lines to print and the JSON to keep. */
  run(database: BenchDatabase, major: 15 | 18): Promise<{ lines: string[]; report: unknown }>;
}

const scenarios: Scenario[] = [
  {
    name: 'ingest',
    run: async (database) => {
      const report = await ingestScenario(database, {
        connections: settings.BENCH_CONNECTIONS,
        seconds: settings.BENCH_SECONDS,
        rounds: settings.BENCH_ROUNDS,
      });
      return { lines: renderIngest(report), report };
    },
  },
  {
    name: 'apply',
    run: async (database) => {
      const report = await applyScenario(database, {
        events: settings.BENCH_APPLY_EVENTS,
        workers: settings.BENCH_APPLY_WORKERS,
        concurrency: settings.BENCH_APPLY_CONCURRENCY,
        batchSize: settings.BENCH_APPLY_BATCH,
        pollingIntervalMs: settings.BENCH_APPLY_POLLING_MS,
        rate: settings.BENCH_APPLY_RATE,
        seconds: settings.BENCH_APPLY_E2E_SECONDS,
        connections: settings.BENCH_CONNECTIONS,
      });
      return { lines: renderApply(report), report };
    },
  },
  {
    name: 'claim',
    run: async (database) => {
      const report = await claimScenario(database, {
        seconds: settings.BENCH_CLAIM_SECONDS,
        connections: settings.BENCH_CLAIM_CONNECTIONS,
        batches: settings.BENCH_CLAIM_BATCHES,
      });
      return { lines: renderClaim(report), report };
    },
  },
  {
    name: 'pgbench',
    run: async (database) => {
      const report = await pgbenchScenario(database, {
        seconds: settings.BENCH_PGBENCH_SECONDS,
        clients: settings.BENCH_PGBENCH_CLIENTS,
        batches: settings.BENCH_PGBENCH_BATCHES,
      });
      return { lines: renderPgbench(report), report };
    },
  },
  {
    name: 'bytes',
    run: async (database) => {
      const report = await bytesScenario(database, {
        arrivals: settings.BENCH_BYTES_ARRIVALS,
        rate: settings.BENCH_BYTES_RATE,
        connections: settings.BENCH_CONNECTIONS,
        raw: settings.BENCH_BYTES_RAW === '1',
        payloadSearch: settings.BENCH_BYTES_PAYLOAD_SEARCH === '1',
      });
      return { lines: renderBytes(report), report };
    },
  },
  {
    name: 'layout',
    run: async (database) => {
      const report = await layoutScenario(database, {
        rows: settings.BENCH_LAYOUT_ROWS,
        round: settings.BENCH_LAYOUT_ROUND,
      });
      return { lines: renderLayout(report), report };
    },
  },
  {
    name: 'wal',
    run: async (database) => {
      const report = await walScenario(database, {
        rate: settings.BENCH_WAL_RATE,
        seconds: settings.BENCH_WAL_SECONDS,
        workers: settings.BENCH_WAL_WORKERS,
        connections: settings.BENCH_CONNECTIONS,
        prefill: settings.BENCH_WAL_PREFILL,
      });
      return { lines: renderWal(report), report };
    },
  },
  {
    name: 'prune',
    run: async (database) => {
      const report = await pruneScenario(database, {
        rows: settings.BENCH_PRUNE_ROWS,
        batchSize: settings.BENCH_PRUNE_BATCH,
        pauseMs: settings.BENCH_PRUNE_PAUSE_MS,
        rate: settings.BENCH_PRUNE_RATE,
        seconds: settings.BENCH_SECONDS,
        connections: settings.BENCH_CONNECTIONS,
      });
      return { lines: renderPrune(report), report };
    },
  },
  {
    name: 'partitions',
    run: async (database) => {
      const report = await partitionsScenario(database, {
        rows: settings.BENCH_PARTITION_ROWS,
        rowsPerPartition: settings.BENCH_PARTITION_EACH,
        batchSize: settings.BENCH_PARTITION_BATCH,
        rate: settings.BENCH_PARTITION_RATE,
        connections: settings.BENCH_PARTITION_CONNECTIONS,
        seconds: settings.BENCH_PARTITION_SECONDS,
        maxBytes: settings.BENCH_PARTITION_MAX_GB * 1024 ** 3,
        maxBuildSeconds: settings.BENCH_PARTITION_MAX_BUILD_S,
      });
      return { lines: renderPartitions(report), report };
    },
  },
  {
    name: 'soak',
    run: async (database) => {
      const report = await soakScenario(database, {
        rate: settings.BENCH_SOAK_RATE,
        seconds: settings.BENCH_SOAK_SECONDS,
        connections: settings.BENCH_CONNECTIONS,
        retentionSeconds: settings.BENCH_SOAK_RETENTION,
        jobRetentionSeconds: settings.BENCH_SOAK_JOB_RETENTION,
        maintenanceSeconds: settings.BENCH_SOAK_MAINTENANCE,
        pruneEverySeconds: settings.BENCH_SOAK_PRUNE_EVERY,
        sampleEverySeconds: 15,
      });
      return { lines: renderSoak(report), report };
    },
  },
  {
    name: 'console',
    run: async (database) => {
      const report = await consoleSearchScenario(database, {
        sizes: settings.BENCH_CONSOLE_ROWS,
        runs: settings.BENCH_CONSOLE_RUNS,
        payloadSearch: settings.BENCH_CONSOLE_PAYLOAD_SEARCH === '1',
      });
      return { lines: renderConsoleSearch(report), report };
    },
  },
  {
    name: 'api',
    run: async (database) => {
      const report = await apiListsScenario(database, {
        rows: settings.BENCH_API_ROWS,
        runs: settings.BENCH_API_RUNS,
      });
      return { lines: renderApiLists(report), report };
    },
  },
  {
    name: 'destinations',
    run: async (database) => {
      const report = await destinationsScenario(database, {
        events: settings.BENCH_DEST_EVENTS,
        destinations: settings.BENCH_DEST_DESTINATIONS,
        concurrency: settings.BENCH_DEST_CONCURRENCY,
        entities: settings.BENCH_DEST_ENTITIES,
        ratePerSecond: settings.BENCH_DEST_RATE,
        rateSeconds: settings.BENCH_DEST_RATE_SECONDS,
      });
      return { lines: renderDestinations(report), report };
    },
  },
  {
    name: 'buses',
    run: async (database) => {
      const report = await busesScenario(database, {
        events: settings.BENCH_BUS_EVENTS,
        concurrency: settings.BENCH_BUS_CONCURRENCY,
      });
      return { lines: renderBuses(report), report };
    },
  },
  {
    name: 'longrun',
    run: async (database) => {
      const report = await longrunScenario(database, {
        connections: settings.BENCH_CONNECTIONS,
        windowSeconds: settings.BENCH_LONGRUN_WINDOW,
        rows: settings.BENCH_LONGRUN_ROWS,
        maxWindows: settings.BENCH_LONGRUN_WINDOWS,
      });
      return { lines: renderLongrun(report), report };
    },
  },
  {
    name: 'capacity',
    run: async (database, major) => {
      const report = await capacityScenario(database, major, {
        connections: settings.BENCH_CONNECTIONS,
        ingestSeconds: settings.BENCH_CAPACITY_INGEST_SECONDS,
        applyEvents: settings.BENCH_CAPACITY_APPLY_EVENTS,
        overloadRate: settings.BENCH_CAPACITY_OVERLOAD_RATE,
        overloadSeconds: settings.BENCH_CAPACITY_OVERLOAD_SECONDS,
        levelSeconds: settings.BENCH_CAPACITY_LEVEL_SECONDS,
        targetRate: settings.BENCH_CAPACITY_TARGET_RATE,
        targetSeconds: settings.BENCH_CAPACITY_TARGET_SECONDS,
        walRate: settings.BENCH_CAPACITY_WAL_RATE,
        walSeconds: settings.BENCH_CAPACITY_WAL_SECONDS,
        bytesArrivals: settings.BENCH_CAPACITY_BYTES_ARRIVALS,
        destinationEvents: settings.BENCH_CAPACITY_DEST_EVENTS,
      });
      return { lines: renderCapacity(report), report };
    },
  },
];

function markdown(name: string, lines: readonly string[], startLoad: number): string {
  return [
    `# make bench: ${name}`,
    '',
    `${new Date().toISOString()}, ${availableParallelism()} cores, load average ${startLoad.toFixed(1)} at start and ${loadavg()[0]!.toFixed(1)} at end (other work on the machine shows here).`,
    `Every figure: bench/results/${name}.json. What is measured: docs/benchmarks.md.`,
    '',
    '```',
    ...lines,
    '```',
    '',
  ].join('\n');
}

const wanted = new Set(settings.BENCH_SCENARIOS.split(',').map((name) => name.trim()));
const dir = join(ROOT, 'bench', 'results');
mkdirSync(dir, { recursive: true });
const reports = new Map<string, unknown>();
const firstLoad = loadavg()[0]!;
for (const major of settings.BENCH_MAJORS) {
  const suffix = major === 18 ? '' : `-pg${major}`;
  for (const scenario of scenarios.filter((s) => wanted.has(s.name))) {
    const database = await benchDatabase(major);
    const startLoad = loadavg()[0]!;
    try {
      const { lines, report } = await scenario.run(database, major);
      reports.set(`${scenario.name}${suffix}`, report);
      const titled = [`[PostgreSQL ${major}]`, ...lines];
      process.stdout.write(`${titled.join('\n')}\n`);
      writeFileSync(join(dir, `${scenario.name}${suffix}.json`), `${JSON.stringify(report, null, 2)}\n`);
      writeFileSync(
        join(dir, `${scenario.name}${suffix}.md`),
        markdown(`${scenario.name}${suffix}`, titled, startLoad),
      );
    } finally {
      await database.stop();
    }
  }
  const summary = renderSummary(
    (reports.get(`ingest${suffix}`) as IngestReport | undefined) ?? null,
    (reports.get(`apply${suffix}`) as ApplyReport | undefined) ?? null,
    (reports.get(`bytes${suffix}`) as BytesReport | undefined) ?? null,
  );
  if (summary.length > 0) {
    const titled = [`[PostgreSQL ${major}]`, ...summary];
    process.stdout.write(`${titled.join('\n')}\n`);
    writeFileSync(join(dir, `summary${suffix}.md`), markdown(`summary${suffix}`, titled, firstLoad));
  }
}
