// The bytes scenario: what each accepted billing event leaves on disk, per table, once it has
// been applied and its effects relayed. Signed Stripe deliveries go through a real gateway and
// worker at a fixed rate (the load driver, the k6 scripts' mix); then every table's heap, TOAST
// and indexes are divided by the events accepted. The payload (the verified body the inbox must
// keep) is reported apart: the rest is hookgate's and pg-boss's overhead.
//
// Two ways of dividing: the gross figures (each table's whole size over the events, as the
// summary has always counted) include what an empty schema already holds (an empty index is a
// page or two, the partitions made ahead); the marginal ones (every relation's size after the
// run minus before it, over the events) are what each further event costs, per relation and per
// index, and the average size of each of the inbox row's columns says where its heap goes.
import { availableParallelism, loadavg } from 'node:os';
import pg from 'pg';
import { drive } from '../load/driver/driver.ts';
import { DEFAULT_MIX } from '../load/lib/mix.ts';
import type { BenchDatabase } from './processes.ts';
import { nonEmpty, type TableSize, tableSizes } from './sizes.ts';
import { startStack } from './stack.ts';

const SECRET = 'whsec_bench_bytes_5b7c0d1e2f3a4b5c6d7e8f90';
const ENDPOINT = 'billing';

export interface BytesSettings {
  /** Arrivals sent (duplicates included; storage is counted per accepted event). */
  readonly arrivals: number;
  readonly rate: number;
  readonly connections: number;
  /**
   * Give the endpoint a `body: raw` destination (passing `stripe-signature` on), so its claims
   * keep the original bytes in hookgate.inbox_raw: that table's bytes per event are its cost. The
   * destination is a closed port with no retries, so its deliveries end dead at once.
   */
  readonly raw: boolean;
  /** Give the endpoint `payloadSearch: true` (its rows go into the console's payload index). */
  readonly payloadSearch: boolean;
}

/** One relation's bytes per accepted event, after the run minus before it. */
export interface RelationBytes {
  readonly table: string;
  /** Heap, TOAST (with its index), each index, and their sum with the free space and visibility maps. */
  readonly heap: number;
  readonly toast: number;
  readonly indexes: Readonly<Record<string, number>>;
  readonly total: number;
}

export interface TableBytes {
  readonly table: string;
  readonly rows: number;
  /** Per accepted event: heap, TOAST, indexes, total. */
  readonly perEvent: {
    readonly heap: number;
    readonly toast: number;
    readonly indexes: number;
    readonly total: number;
  };
  readonly byIndexPerEvent: Readonly<Record<string, number>>;
}

export interface BytesReport {
  readonly scenario: 'bytes';
  readonly settings: BytesSettings;
  readonly events: number;
  /** Jobs per state in pg-boss after the drain (what retention has not yet deleted). */
  readonly jobs: Readonly<Record<string, number>>;
  /**
   * Average size of a live row (pg_column_size of the whole row, payload included for the inbox):
   * what a row takes once the space of its dead versions is reused, without page overhead.
   */
  readonly liveRowBytes: Readonly<Record<string, number>>;
  /** Stored size of the verified bodies (pg_column_size of inbox.payload), per event. */
  readonly payloadPerEvent: number;
  readonly tables: readonly TableBytes[];
  /** Per event, payload excluded: the inbox, pg-boss's tables and destination_deliveries. */
  readonly overheadPerEvent: {
    readonly inbox: number;
    readonly pgboss: number;
    readonly deliveries: number;
    readonly billing: number;
    /** hookgate.inbox_raw (only with `raw`): the original bytes and headers, with their row and index. */
    readonly raw: number;
  };
  /** With `raw`: the original bytes themselves (octet_length of inbox_raw.body), per event. */
  readonly rawBodyPerEvent: number;
  /** pg-boss's per-queue policy as the queues were left: seconds completed jobs are kept. */
  readonly queues: readonly { name: string; deleteAfterSeconds: number; retentionSeconds: number }[];
  readonly loadAverage: { readonly start: number; readonly end: number };
  /** Marginal bytes per event of every relation that grew (partitions of the inbox folded into one). */
  readonly marginal: readonly RelationBytes[];
  /** Average pg_column_size of each inbox column (null columns: 0), and of the whole row. */
  readonly inboxColumns: Readonly<Record<string, number>>;
}

/** Inbox partitions are one relation here: which week a run lands in is not the point. */
const relationOf = (table: string) => table.replace(/^hookgate\.inbox_(p\d{8}|default)$/, 'hookgate.inbox');
const indexOf = (index: string) => index.replace(/^inbox_(p\d{8}|default)_/, 'inbox_');

function marginalBytes(
  before: readonly TableSize[],
  after: readonly TableSize[],
  events: number,
): RelationBytes[] {
  const sizes = new Map<
    string,
    { heap: number; toast: number; total: number; indexes: Map<string, number> }
  >();
  const add = (list: readonly TableSize[], sign: 1 | -1) => {
    for (const s of list) {
      const name = relationOf(s.table);
      const entry = sizes.get(name) ?? { heap: 0, toast: 0, total: 0, indexes: new Map<string, number>() };
      entry.heap += sign * s.heap;
      entry.toast += sign * s.toast;
      entry.total += sign * s.total;
      for (const [index, bytes] of Object.entries(s.byIndex))
        entry.indexes.set(indexOf(index), (entry.indexes.get(indexOf(index)) ?? 0) + sign * bytes);
      sizes.set(name, entry);
    }
  };
  add(after, 1);
  add(before, -1);
  return [...sizes.entries()]
    .filter(([, s]) => s.total !== 0)
    .map(([table, s]) => ({
      table,
      heap: s.heap / events,
      toast: s.toast / events,
      indexes: Object.fromEntries(
        [...s.indexes.entries()]
          .filter(([, bytes]) => bytes !== 0)
          .map(([name, bytes]) => [name, bytes / events]),
      ),
      total: s.total / events,
    }))
    .sort((a, b) => b.total - a.total);
}

async function inboxColumnBytes(db: pg.Client): Promise<Record<string, number>> {
  const columns = (
    await db.query<{ name: string }>(
      `SELECT attname AS name FROM pg_attribute
        WHERE attrelid = 'hookgate.inbox'::regclass AND attnum > 0 AND NOT attisdropped ORDER BY attnum`,
    )
  ).rows.map((row) => row.name);
  const averages = columns.map(
    (name) => `coalesce(avg(pg_column_size(${pg.escapeIdentifier(name)})), 0)::float8`,
  );
  const row = (
    await db.query<{ sizes: number[] }>(
      `SELECT ARRAY[${averages.join(', ')}, avg(pg_column_size(t.*))::float8] AS sizes FROM hookgate.inbox t`,
    )
  ).rows[0]!.sizes;
  return Object.fromEntries([...columns, '(whole row)'].map((name, i) => [name, row[i]!]));
}

async function waitForDrain(db: pg.Client, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const { rows } = await db.query<{ pending: number; jobs: number }>(
      `SELECT (SELECT count(*) FROM hookgate.inbox WHERE status = 'pending')::int AS pending,
              (SELECT count(*) FROM pgboss.job
                WHERE name LIKE 'hookgate.%' AND state IN ('created', 'retry', 'active'))::int AS jobs`,
    );
    if (rows[0]!.pending === 0 && rows[0]!.jobs === 0) return;
    if (Date.now() > deadline) throw new Error(`drain timed out: ${JSON.stringify(rows[0])}`);
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}

const sum = (sizes: readonly TableSize[], prefix: string) =>
  sizes.filter((s) => s.table.startsWith(prefix)).reduce((total, s) => total + s.total, 0);

export async function bytesScenario(database: BenchDatabase, settings: BytesSettings): Promise<BytesReport> {
  const loadAtStart = loadavg()[0]!;
  const db = new pg.Client({ connectionString: database.url, application_name: 'bench-bytes' });
  await db.connect();
  const stack = await startStack(
    database.url,
    {
      worker: { pollingInterval: '200ms' },
      endpoints: {
        [ENDPOINT]: {
          provider: 'stripe',
          secrets: [SECRET],
          handler: 'billing',
          // Set only when on: a configuration that names it is refused by code from before it.
          ...(settings.payloadSearch ? { payloadSearch: true } : {}),
          ...(settings.raw
            ? {
                destinations: {
                  copy: {
                    url: 'http://127.0.0.1:9/',
                    body: 'raw',
                    passthroughHeaders: ['stripe-signature'],
                    retry: { limit: 0 },
                  },
                },
              }
            : {}),
        },
      },
    },
    1,
  );
  // What the schema holds before the first event (the stack made the partitions and queues).
  await db.query('VACUUM ANALYZE');
  const before = await tableSizes(db);
  try {
    const load = await drive({
      baseUrl: stack.gatewayUrl,
      targets: [{ endpoint: ENDPOINT, provider: 'stripe', secret: SECRET }],
      rate: settings.rate,
      seconds: Math.ceil(settings.arrivals / settings.rate),
      maxArrivals: settings.arrivals,
      connections: settings.connections,
      maxInFlight: 10_000,
      requestTimeoutMs: 10_000,
      mix: DEFAULT_MIX,
      run: { id: 'bytes', startedAt: Math.floor(Date.now() / 1000) },
    });
    if (load.acked === 0) throw new Error(`no delivery was acknowledged: ${load.firstFailure}`);
    await waitForDrain(db, 120_000);
  } finally {
    await stack.stop();
  }
  try {
    // Statistics current, dead tuples of the settling updates reclaimed for reuse (as autovacuum
    // would); the files keep their size.
    await db.query('VACUUM ANALYZE');
    const events = (await db.query<{ n: number }>('SELECT count(*)::int AS n FROM hookgate.inbox')).rows[0]!
      .n;
    const payload = (
      await db.query<{ bytes: number }>(
        'SELECT coalesce(sum(pg_column_size(payload)), 0)::float8 AS bytes FROM hookgate.inbox',
      )
    ).rows[0]!.bytes;
    const rawBody = (
      await db.query<{ bytes: number }>(
        'SELECT coalesce(sum(octet_length(body)), 0)::float8 AS bytes FROM hookgate.inbox_raw',
      )
    ).rows[0]!.bytes;
    const jobs = await db.query<{ state: string; n: number }>(
      `SELECT state::text, count(*)::int AS n FROM pgboss.job WHERE name LIKE 'hookgate.%' GROUP BY 1 ORDER BY 1`,
    );
    const queues = await db.query<{ name: string; deletion_seconds: number; retention_seconds: number }>(
      `SELECT name, deletion_seconds, retention_seconds FROM pgboss.queue WHERE name LIKE 'hookgate.%' ORDER BY name`,
    );
    const sizes = await tableSizes(db);
    const live = await db.query<{ inbox: number | null; deliveries: number | null; jobs: number | null }>(
      `SELECT (SELECT avg(pg_column_size(t.*)) FROM hookgate.inbox t)::float8 AS inbox,
              (SELECT avg(pg_column_size(t.*)) FROM hookgate.destination_deliveries t)::float8 AS deliveries,
              (SELECT avg(pg_column_size(t.*)) FROM pgboss.job t WHERE name LIKE 'hookgate.%')::float8 AS jobs`,
    );
    const per = (n: number) => n / events;
    const marginal = marginalBytes(before, sizes, events);
    const inboxColumns = await inboxColumnBytes(db);
    const tables = nonEmpty(sizes).map((s) => ({
      table: s.table,
      rows: s.liveTuples,
      perEvent: { heap: per(s.heap), toast: per(s.toast), indexes: per(s.indexes), total: per(s.total) },
      byIndexPerEvent: Object.fromEntries(
        Object.entries(s.byIndex).map(([name, bytes]) => [name, per(bytes)]),
      ),
    }));
    return {
      scenario: 'bytes',
      settings,
      events,
      jobs: Object.fromEntries(jobs.rows.map((r) => [r.state, r.n])),
      liveRowBytes: {
        'hookgate.inbox': live.rows[0]?.inbox ?? Number.NaN,
        'hookgate.destination_deliveries': live.rows[0]?.deliveries ?? Number.NaN,
        'pgboss.job': live.rows[0]?.jobs ?? Number.NaN,
      },
      payloadPerEvent: per(payload),
      rawBodyPerEvent: per(rawBody),
      tables,
      overheadPerEvent: {
        inbox: per(sum(sizes, 'hookgate.inbox') - sum(sizes, 'hookgate.inbox_raw') - payload),
        raw: per(sum(sizes, 'hookgate.inbox_raw')),
        pgboss: per(sum(sizes, 'pgboss.')),
        deliveries: per(sum(sizes, 'hookgate.destination_deliveries')),
        billing: per(sum(sizes, 'billing.')),
      },
      queues: queues.rows.map((q) => ({
        name: q.name,
        deleteAfterSeconds: q.deletion_seconds,
        retentionSeconds: q.retention_seconds,
      })),
      loadAverage: { start: loadAtStart, end: loadavg()[0]! },
      marginal,
      inboxColumns,
    };
  } finally {
    await db.end();
  }
}

const b = (n: number) => n.toFixed(0).padStart(7);

export function renderBytes(report: BytesReport): string[] {
  const s = report.settings;
  const lines = [
    `bytes: ${report.events} accepted Stripe billing events (${s.arrivals} arrivals at ${s.rate}/s, the load mix with duplicates), 1 gateway + 1 worker, after the drain and VACUUM; payloadSearch ${s.payloadSearch ? 'on' : 'off'}`,
    `  jobs left in pg-boss: ${Object.entries(report.jobs)
      .map(([k, v]) => `${k}=${v}`)
      .join(' ')}`,
    `  queues: ${report.queues.map((q) => `${q.name} deleteAfter ${q.deleteAfterSeconds}s`).join(', ')}`,
    '  bytes per accepted event      heap   toast indexes   total',
  ];
  for (const t of report.tables) {
    lines.push(
      `  ${t.table.padEnd(26)}${b(t.perEvent.heap)} ${b(t.perEvent.toast)} ${b(t.perEvent.indexes)} ${b(t.perEvent.total)}   (${t.rows} rows; ${Object.entries(
        t.byIndexPerEvent,
      )
        .map(([name, bytes]) => `${name} ${bytes.toFixed(0)}`)
        .join(', ')})`,
    );
  }
  const o = report.overheadPerEvent;
  lines.push(
    `  payload (inbox.payload as stored): ${report.payloadPerEvent.toFixed(0)} B per event`,
    `  average live row (pg_column_size, no page or index overhead): ${Object.entries(report.liveRowBytes)
      .map(([table, bytes]) => `${table} ${bytes.toFixed(0)} B`)
      .join(', ')}`,
    `  overhead per event, payload excluded: inbox ${o.inbox.toFixed(0)} B, pg-boss ${o.pgboss.toFixed(0)} B, destination_deliveries ${o.deliveries.toFixed(0)} B (billing tables ${o.billing.toFixed(0)} B, the handler's own data)`,
    ...(s.raw
      ? [
          `  body: raw kept (hookgate.inbox_raw): ${o.raw.toFixed(0)} B per event, of which the original bytes ${report.rawBodyPerEvent.toFixed(0)} B`,
        ]
      : []),
    '  marginal bytes per accepted event (after the run minus before it; inbox partitions as one):',
    ...report.marginal.map(
      (r) =>
        `    ${r.table.padEnd(36)} total ${b(r.total)}  heap ${b(r.heap)}  toast ${b(r.toast)}  ${Object.entries(
          r.indexes,
        )
          .map(([name, bytes]) => `${name} ${bytes.toFixed(0)}`)
          .join(', ')}`,
    ),
    `    all but the handler's tables, payload excluded: ${(
      report.marginal.filter((r) => !r.table.startsWith('billing.')).reduce((sum, r) => sum + r.total, 0) -
        report.payloadPerEvent
    ).toFixed(
      0,
    )} B; without pg-boss's jobs (gone ${report.queues[0]?.deleteAfterSeconds ?? '?'} s after they finish): ${(
      report.marginal
        .filter((r) => !r.table.startsWith('billing.') && !r.table.startsWith('pgboss.'))
        .reduce((sum, r) => sum + r.total, 0) - report.payloadPerEvent
    ).toFixed(0)} B`,
    `  inbox columns (average pg_column_size, B): ${Object.entries(report.inboxColumns)
      .map(([name, bytes]) => `${name} ${bytes.toFixed(1)}`)
      .join(', ')}`,
    `  machine: ${availableParallelism()} cores; load average ${report.loadAverage.start.toFixed(1)} at start, ${report.loadAverage.end.toFixed(1)} at end`,
  );
  return lines;
}
