// The capacity scenario's figures as docs/performance.md shows them: which rows there are, how
// each is printed, and the machine each run was measured on. Pure: bench/capacity.ts fills a
// report, bench/performance-doc.ts writes the page from the reports, and a unit test checks that
// the page's tables are exactly the ones these reports render.
import { z } from 'zod';

/** One row of the figures table: its key in the report, its label and how it is printed. */
interface Row {
  readonly key: string;
  readonly label: string;
  readonly digits: number;
  /** The phase of bench/capacity.ts that measures it, and the knob that lengthens that phase. */
  readonly phase: string;
}

const GATEWAY = 'gateway: closed loop, `BENCH_CAPACITY_INGEST_SECONDS`';
const APPLY = 'apply: backlog drained, `BENCH_CAPACITY_APPLY_EVENTS`';
const MID = 'end to end at 50 % of saturation, `BENCH_CAPACITY_LEVEL_SECONDS`';
const WAL = 'wal: `BENCH_CAPACITY_WAL_RATE` for `BENCH_CAPACITY_WAL_SECONDS`';
const BYTES = 'bytes: `BENCH_CAPACITY_BYTES_ARRIVALS`';
const SATURATION = 'saturation: `BENCH_CAPACITY_OVERLOAD_RATE` for `BENCH_CAPACITY_OVERLOAD_SECONDS`';
const TARGET = 'target: `BENCH_CAPACITY_TARGET_RATE` for `BENCH_CAPACITY_TARGET_SECONDS`';
const CONNECTIONS = "connections: `serve`'s pool sizes (services/core/config/connections.ts)";
const DESTINATIONS = 'destinations: `BENCH_CAPACITY_DEST_EVENTS` deliveries each';

/** The latency rows of one load level (a share of the saturation measured first). */
function level(share: number): Row[] {
  const phase = `end to end at ${share} % of saturation, \`BENCH_CAPACITY_LEVEL_SECONDS\``;
  const at = `at ${share} % of saturation`;
  return [
    { key: `e2e${share}.rate`, label: `${at}: arrivals/s sent`, digits: 0, phase },
    { key: `e2e${share}.p50`, label: `${at}: received → processed p50, ms`, digits: 0, phase },
    { key: `e2e${share}.p99`, label: `${at}: received → processed p99, ms`, digits: 0, phase },
    { key: `e2e${share}.ackP50`, label: `${at}: acknowledgement p50, ms`, digits: 1, phase },
    { key: `e2e${share}.ackP99`, label: `${at}: acknowledgement p99, ms`, digits: 1, phase },
  ];
}

export const LEVELS = [25, 50, 80] as const;

export const ROWS: readonly Row[] = [
  {
    key: 'gateway.perCore',
    label: 'Deliveries/s per gateway core (accepted; signed Standard Webhooks, 20 % repeats)',
    digits: 0,
    phase: GATEWAY,
  },
  { key: 'gateway.rate', label: 'Deliveries/s accepted, whole machine', digits: 0, phase: GATEWAY },
  {
    key: 'gateway.postgresCpu',
    label: 'PostgreSQL CPU s per 1 000 deliveries accepted',
    digits: 3,
    phase: GATEWAY,
  },
  {
    key: 'apply.perCore',
    label: 'Applied events/s per worker core (billing handler)',
    digits: 0,
    phase: APPLY,
  },
  {
    key: 'apply.rate',
    label: 'Applied events/s, 2 workers × 2 loops, whole machine',
    digits: 0,
    phase: APPLY,
  },
  { key: 'apply.postgresCpu', label: 'PostgreSQL CPU s per 1 000 events applied', digits: 3, phase: APPLY },
  {
    key: 'e2e.postgresCpu',
    label: 'PostgreSQL CPU s per 1 000 events, end to end (claim + apply)',
    digits: 3,
    phase: MID,
  },
  { key: 'wal.walMB', label: 'WAL MB per 1 000 events', digits: 2, phase: WAL },
  { key: 'wal.dataMB', label: 'Data pages written, MB per 1 000 events', digits: 2, phase: WAL },
  { key: 'wal.diskMB', label: 'Disk MB written per 1 000 events (WAL + data pages)', digits: 2, phase: WAL },
  {
    key: 'bytes.retained',
    label: "Bytes retained per event: hookgate's tables and pg-boss's jobs, payload included",
    digits: 0,
    phase: BYTES,
  },
  {
    key: 'bytes.retainedWithoutJobs',
    label: "Bytes retained per event once pg-boss's jobs are deleted",
    digits: 0,
    phase: BYTES,
  },
  { key: 'bytes.payload', label: 'of which the payload (inbox.payload as stored)', digits: 0, phase: BYTES },
  {
    key: 'connections.gateway',
    label: 'Connections per gateway process, at most',
    digits: 0,
    phase: CONNECTIONS,
  },
  {
    key: 'connections.worker',
    label: 'Connections per worker process, at most',
    digits: 0,
    phase: CONNECTIONS,
  },
  {
    key: 'connections.console',
    label: 'Connections per console process, at most',
    digits: 0,
    phase: CONNECTIONS,
  },
  { key: 'connections.gatewaySeen', label: 'Connections seen, gateway (peak)', digits: 0, phase: MID },
  {
    key: 'connections.workersSeen',
    label: 'Connections seen, 2 workers together (peak)',
    digits: 0,
    phase: MID,
  },
  {
    key: 'saturation.rate',
    label: 'Saturation: events/s carried end to end (gateway + 2 workers + sender)',
    digits: 0,
    phase: SATURATION,
  },
  {
    key: 'saturation.offered',
    label:
      'Saturation run: arrivals/s the sender achieved (above the line before it: the stack was the limit)',
    digits: 0,
    phase: SATURATION,
  },
  ...LEVELS.flatMap(level),
  { key: 'target.rate', label: 'Target run: arrivals/s sent', digits: 0, phase: TARGET },
  {
    key: 'target.carried',
    label: 'Target run: events/s carried end to end (accepted, then processed)',
    digits: 0,
    phase: TARGET,
  },
  { key: 'target.p50', label: 'Target run: received → processed p50, ms', digits: 0, phase: TARGET },
  { key: 'target.p99', label: 'Target run: received → processed p99, ms', digits: 0, phase: TARGET },
  { key: 'target.ackP99', label: 'Target run: acknowledgement p99, ms', digits: 1, phase: TARGET },
  {
    key: 'target.failures',
    label: 'Target run: failed sends (non-2xx, errors, dropped)',
    digits: 0,
    phase: TARGET,
  },
  {
    key: 'target.unsettled',
    label: 'Target run: events not settled after the drain',
    digits: 0,
    phase: TARGET,
  },
  { key: 'target.violations', label: 'Target run: `hookgate verify` violations', digits: 0, phase: TARGET },
  {
    key: 'target.cpuMs',
    label: 'Target run: CPU ms per event, gateway + workers + PostgreSQL',
    digits: 3,
    phase: TARGET,
  },
  { key: 'target.gatewayMs', label: 'Target run: of which the gateway', digits: 3, phase: TARGET },
  { key: 'target.workerMs', label: 'Target run: of which the workers', digits: 3, phase: TARGET },
  { key: 'target.postgresMs', label: 'Target run: of which PostgreSQL', digits: 3, phase: TARGET },
  {
    key: 'http.relayUs',
    label: 'HTTP destination: relay CPU µs per delivery',
    digits: 0,
    phase: DESTINATIONS,
  },
  {
    key: 'http.postgresUs',
    label: 'HTTP destination: PostgreSQL CPU µs per delivery',
    digits: 0,
    phase: DESTINATIONS,
  },
  { key: 'http.rate', label: 'HTTP destination: deliveries/s, one relay', digits: 0, phase: DESTINATIONS },
  {
    key: 'nats.relayUs',
    label: 'NATS JetStream destination: relay CPU µs per delivery',
    digits: 0,
    phase: DESTINATIONS,
  },
  {
    key: 'nats.rate',
    label: 'NATS JetStream destination: deliveries/s, one relay',
    digits: 0,
    phase: DESTINATIONS,
  },
  {
    key: 'rabbitmq.relayUs',
    label: 'RabbitMQ destination: relay CPU µs per delivery',
    digits: 0,
    phase: DESTINATIONS,
  },
  {
    key: 'rabbitmq.rate',
    label: 'RabbitMQ destination: deliveries/s, one relay',
    digits: 0,
    phase: DESTINATIONS,
  },
];

/** JSON has no NaN: a figure that could not be measured is null. */
const figure = z.number().nullable();

export const machineSchema = z.object({
  cores: z.number().int().positive(),
  cpuModel: z.string(),
  cpuMHz: z.number(),
  memoryGiB: z.number(),
  disk: z.string(),
  postgres: z.object({ version: z.string(), settings: z.record(z.string(), z.string()) }),
});

export type Machine = z.infer<typeof machineSchema>;

/** What of a capacity report the page shows; the report holds the phases' whole reports besides. */
export const capacitySummarySchema = z.object({
  scenario: z.literal('capacity'),
  major: z.union([z.literal(15), z.literal(18)]),
  startedAt: z.string(),
  finishedAt: z.string(),
  machine: machineSchema,
  loadAverage: z.object({ start: z.number(), highest: z.number(), end: z.number() }),
  figures: z.record(z.string(), figure),
});

export type CapacitySummary = z.infer<typeof capacitySummarySchema>;

export const BEGIN = '<!-- capacity figures: generated by bench/performance-doc.ts, do not edit -->';
export const END = '<!-- end of capacity figures -->';

const print = (value: number | null | undefined, digits: number) =>
  value === null || value === undefined || !Number.isFinite(value)
    ? 'n/a'
    : value.toLocaleString('en-US', { minimumFractionDigits: digits, maximumFractionDigits: digits });

const table = (header: readonly string[], rows: readonly (readonly string[])[]) =>
  [header, header.map(() => '---'), ...rows].map((cells) => `| ${cells.join(' | ')} |`);

/** The generated part of docs/performance.md: the machine of each run, then every figure. */
export function renderCapacityPage(reports: readonly CapacitySummary[]): string {
  const majors = reports.map((r) => `PostgreSQL ${r.major}`);
  const settingNames = [...new Set(reports.flatMap((r) => Object.keys(r.machine.postgres.settings)))];
  const machineRows: string[][] = [
    ['Run (UTC)', ...reports.map((r) => `${r.startedAt.slice(0, 16)} to ${r.finishedAt.slice(11, 16)}`)],
    ['Cores', ...reports.map((r) => String(r.machine.cores))],
    ['CPU', ...reports.map((r) => `${r.machine.cpuModel}, ${print(r.machine.cpuMHz, 0)} MHz`)],
    ['Memory', ...reports.map((r) => `${print(r.machine.memoryGiB, 1)} GiB`)],
    ['Disk (the data directory)', ...reports.map((r) => r.machine.disk)],
    ['PostgreSQL', ...reports.map((r) => r.machine.postgres.version)],
    ...settingNames.map((name) => [
      `\`${name}\``,
      ...reports.map((r) => r.machine.postgres.settings[name] ?? 'n/a'),
    ]),
    [
      'Load average (1 min): start, highest, end',
      ...reports.map((r) =>
        [r.loadAverage.start, r.loadAverage.highest, r.loadAverage.end].map((n) => print(n, 1)).join(', '),
      ),
    ],
  ];
  const figureRows = ROWS.map((row) => [
    row.label,
    ...reports.map((r) => print(r.figures[row.key], row.digits)),
    row.phase,
  ]);
  return [
    BEGIN,
    '',
    '### The machine',
    '',
    ...table(['', ...majors], machineRows),
    '',
    '### The figures',
    '',
    ...table(['Figure', ...majors, 'Phase of the scenario, and its knob'], figureRows),
    '',
    END,
  ].join('\n');
}

/** The page with its generated part replaced. */
export function withCapacityPage(page: string, reports: readonly CapacitySummary[]): string {
  const from = page.indexOf(BEGIN);
  const to = page.indexOf(END);
  if (from < 0 || to < from) throw new Error('docs/performance.md has lost its capacity figures markers');
  return page.slice(0, from) + renderCapacityPage(reports) + page.slice(to + END.length);
}
