// The prune scenario: what retention costs, against how much it deletes and how big the table
// is. The inbox is filled with generate_series (settled rows spread evenly over 40 days, a Stripe
// sized payload, 1% dead rows that prune must keep), then `pruneInbox` deletes the oldest 1% and
// then the next 9%: seconds per million rows deleted, at each table size. Then, on the largest
// table, the gateway takes signed deliveries at a fixed rate, alone and while a prune runs,
// paced and flat out, in alternating rounds: the ack p99 of each.

import { availableParallelism, loadavg } from 'node:os';
import pg from 'pg';
import { type DriverResult, drive } from '../load/driver/driver.ts';
import { DEFAULT_MIX } from '../load/lib/mix.ts';
import { DEFAULT_DEDUPE_HORIZON_MS } from '../services/core/config/dedupe-schema.ts';
import { pruneInbox } from '../services/core/inbox/prune.ts';
import type { BenchDatabase } from './processes.ts';
import { tableSizes } from './sizes.ts';
import { startStack } from './stack.ts';

const SECRET = 'whsec_bench_prune_5b7c0d1e2f3a4b5c6d7e8f90';
const DAY = 86_400_000;
const SPAN_DAYS = 40;

export interface PruneSettings {
  /** Table sizes to fill, e.g. [1_000_000, 10_000_000]. */
  readonly rows: readonly number[];
  readonly batchSize: number;
  /** Pause between batches of the paced prune that runs alongside ingest. */
  readonly pauseMs: number;
  /** Ingest during prune: arrival rate and seconds per phase. */
  readonly rate: number;
  readonly seconds: number;
  readonly connections: number;
}

export interface PrunePass {
  readonly olderThanDays: number;
  readonly deleted: number;
  readonly batches: number;
  readonly seconds: number;
  readonly secondsPerMillion: number;
  /** Slowest single batch, ms. */
  readonly slowestBatchMs: number;
}

export interface PruneTable {
  readonly rows: number;
  readonly fillSeconds: number;
  readonly inboxBytes: number;
  readonly passes: readonly PrunePass[];
  /** Dead rows before and after the passes: prune must leave all of them. */
  readonly deadKept: number;
  readonly deadExpected: number;
}

export interface IngestRound {
  readonly alone: DriverResult;
  /** While a prune paced by pauseMs between batches runs, stopped when the load ends. */
  readonly duringPacedPrune: DriverResult;
  readonly pacedPrune: PrunePass;
  /** While a prune runs flat out, stopped when the load ends. */
  readonly duringPrune: DriverResult;
  readonly prune: PrunePass;
}

export interface IngestDuringPrune {
  readonly rate: number;
  readonly seconds: number;
  readonly tableRows: number;
  readonly rounds: readonly IngestRound[];
}

export interface PruneReport {
  readonly scenario: 'prune';
  readonly settings: PruneSettings;
  readonly tables: readonly PruneTable[];
  readonly ingest: IngestDuringPrune | null;
  readonly loadAverage: { readonly start: number; readonly end: number };
}

const PAYLOAD = JSON.stringify({
  id: 'evt_prune',
  object: 'event',
  api_version: '2025-01-27.acacia',
  created: 1764460800,
  livemode: false,
  pending_webhooks: 1,
  type: 'invoice.paid',
  data: {
    object: {
      id: 'in_prune',
      object: 'invoice',
      customer: 'cus_prune',
      status: 'paid',
      currency: 'eur',
      amount_due: 4200,
      amount_paid: 4200,
      status_transitions: { paid_at: 1764460800, voided_at: null },
    },
  },
});

/**
 * Rows $3 + 1 .. $3 + $1 of $4, received evenly over the last SPAN_DAYS days (row $4 oldest);
 * every 100th is dead, every 25th ignored, the rest processed.
 */
const FILL = `
  INSERT INTO hookgate.inbox
    (endpoint, event_id, provider, event_type, payload, status, attempts, received_at, processed_at)
  SELECT 'billing', 'evt_fill_' || n, 'stripe', 'invoice.paid', $2::jsonb,
         CASE WHEN n % 100 = 0 THEN 'dead' WHEN n % 25 = 0 THEN 'ignored' ELSE 'processed' END,
         1, t, t
    FROM generate_series($3::int + 1, $3::int + $1::int) AS n,
         LATERAL (SELECT now() - (n::float8 / $4::int) * make_interval(days => ${SPAN_DAYS})) AS at(t)`;

async function fill(db: pg.Client, rows: number): Promise<number> {
  const started = performance.now();
  await db.query('TRUNCATE hookgate.inbox');
  for (let done = 0; done < rows; ) {
    // A million rows per statement: each its own transaction.
    const chunk = Math.min(1_000_000, rows - done);
    await db.query(FILL, [chunk, PAYLOAD, done, rows]);
    done += chunk;
  }
  await db.query('VACUUM ANALYZE hookgate.inbox');
  await db.query('CHECKPOINT');
  return (performance.now() - started) / 1000;
}

async function timedPrune(
  pool: pg.Pool,
  olderThanDays: number,
  batchSize: number,
  pauseMs = 0,
  signal?: AbortSignal,
): Promise<PrunePass> {
  let slowest = 0;
  let last = performance.now();
  const started = last;
  const counts = await pruneInbox(pool, {
    olderThan: olderThanDays * DAY,
    dedupe: { now: new Date(), horizonMs: DEFAULT_DEDUPE_HORIZON_MS },
    batchSize,
    pauseMs,
    ...(signal ? { signal } : {}),
    onBatch: () => {
      const now = performance.now();
      slowest = Math.max(slowest, now - last);
      last = now + pauseMs;
    },
  });
  const seconds = (performance.now() - started) / 1000;
  return {
    olderThanDays,
    deleted: counts.rows,
    batches: counts.batches,
    seconds,
    secondsPerMillion: counts.rows > 0 ? (seconds / counts.rows) * 1_000_000 : Number.NaN,
    slowestBatchMs: slowest,
  };
}

async function ingestDuringPrune(
  url: string,
  pool: pg.Pool,
  settings: PruneSettings,
  tableRows: number,
): Promise<IngestDuringPrune> {
  const stack = await startStack(
    url,
    { endpoints: { billing: { provider: 'stripe', secrets: [SECRET], handler: 'record' } } },
    1,
  );
  try {
    let run = 0;
    const arrivals = () =>
      drive({
        baseUrl: stack.gatewayUrl,
        targets: [{ endpoint: 'billing', provider: 'stripe', secret: SECRET }],
        rate: settings.rate,
        seconds: settings.seconds,
        connections: settings.connections,
        maxInFlight: 10_000,
        requestTimeoutMs: 10_000,
        mix: DEFAULT_MIX,
        run: { id: `ingest${++run}`, startedAt: Math.floor(Date.now() / 1000) },
      });
    /** The load, with a prune (all settled rows, oldest first) running until the load ends. */
    const withPrune = async (pauseMs: number) => {
      const stop = new AbortController();
      const pruning = timedPrune(pool, 0, settings.batchSize, pauseMs, stop.signal);
      const load = await arrivals();
      stop.abort();
      return { load, prune: await pruning };
    };
    await arrivals();
    const rounds: IngestRound[] = [];
    // Alternating, so drift in the machine's other work falls on every phase alike.
    for (let round = 0; round < 3; round += 1) {
      const alone = await arrivals();
      const paced = await withPrune(settings.pauseMs);
      const flat = await withPrune(0);
      rounds.push({
        alone,
        duringPacedPrune: paced.load,
        pacedPrune: paced.prune,
        duringPrune: flat.load,
        prune: flat.prune,
      });
    }
    return { rate: settings.rate, seconds: settings.seconds, tableRows, rounds };
  } finally {
    await stack.stop();
  }
}

export async function pruneScenario(database: BenchDatabase, settings: PruneSettings): Promise<PruneReport> {
  const loadAtStart = loadavg()[0]!;
  const db = new pg.Client({ connectionString: database.url, application_name: 'bench-prune' });
  await db.connect();
  const pool = new pg.Pool({ connectionString: database.url, max: 2, application_name: 'bench-prune' });
  const tables: PruneTable[] = [];
  let ingest: IngestDuringPrune | null = null;
  try {
    const sizes = [...settings.rows].sort((a, b) => a - b);
    for (const [index, rows] of sizes.entries()) {
      const fillSeconds = await fill(db, rows);
      const inbox = (await tableSizes(db, ['hookgate'])).find((t) => t.table === 'hookgate.inbox');
      const deadPastWindow = async () =>
        (await db.query<{ n: number }>(`SELECT count(*)::int AS n FROM hookgate.inbox WHERE status = 'dead'`))
          .rows[0]!.n;
      const deadExpected = await deadPastWindow();
      // The oldest 1%, then the next 9%.
      const passes = [
        await timedPrune(pool, SPAN_DAYS * 0.99, settings.batchSize),
        await timedPrune(pool, SPAN_DAYS * 0.9, settings.batchSize),
      ];
      tables.push({
        rows,
        fillSeconds,
        inboxBytes: inbox?.total ?? Number.NaN,
        passes,
        deadKept: await deadPastWindow(),
        deadExpected,
      });
      if (index === sizes.length - 1 && settings.rate > 0) {
        ingest = await ingestDuringPrune(database.url, pool, settings, rows);
      }
    }
    return {
      scenario: 'prune',
      settings,
      tables,
      ingest,
      loadAverage: { start: loadAtStart, end: loadavg()[0]! },
    };
  } finally {
    await pool.end();
    await db.end();
  }
}

export function renderPrune(report: PruneReport): string[] {
  const s = report.settings;
  const lines = [
    `prune: inbox filled with generate_series (settled rows over ${SPAN_DAYS} days, 1% dead), pruneInbox in batches of ${s.batchSize}`,
    '  table rows  fill s  inbox MB   pass (older than)   deleted  batches  seconds  s per 1M deleted  slowest batch ms',
  ];
  for (const t of report.tables) {
    t.passes.forEach((p, i) => {
      lines.push(
        `  ${(i === 0 ? String(t.rows) : '').padStart(10)}  ${(i === 0 ? t.fillSeconds.toFixed(0) : '').padStart(6)}  ${(i === 0 ? (t.inboxBytes / 1024 ** 2).toFixed(0) : '').padStart(8)}   ${`${p.olderThanDays.toFixed(1)} d`.padStart(17)}   ${String(p.deleted).padStart(7)}  ${String(p.batches).padStart(7)}  ${p.seconds.toFixed(2).padStart(7)}  ${p.secondsPerMillion.toFixed(1).padStart(16)}  ${p.slowestBatchMs.toFixed(0).padStart(16)}`,
      );
    });
    lines.push(
      `  ${''.padStart(10)}  dead rows kept (prune must never delete them): ${t.deadKept} of ${t.deadExpected}`,
    );
  }
  const i = report.ingest;
  if (i) {
    const p99s = (pick: (r: IngestRound) => DriverResult) => i.rounds.map((r) => pick(r).ackP99Ms);
    const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;
    const line = (label: string, pick: (r: IngestRound) => DriverResult) => {
      const values = p99s(pick);
      const failures = i.rounds.reduce((n, r) => n + pick(r).non2xx + pick(r).errors, 0);
      return `    ${label} ack p99 per round ${values.map((v) => v.toFixed(0)).join(' / ')} ms, median ${median(values).toFixed(0)} ms; p50 median ${median(i.rounds.map((r) => pick(r).ackP50Ms)).toFixed(1)} ms; non-2xx + errors ${failures}`;
    };
    const rate = (pick: (r: IngestRound) => PrunePass) =>
      i.rounds.map((r) => (pick(r).deleted / pick(r).seconds).toFixed(0)).join(' / ');
    lines.push(
      `  ingest at ${i.rate}/s, ${i.seconds}s per phase, 3 rounds of (alone, paced prune, flat-out prune) on the ${i.tableRows} row table (gateway + 1 worker, record handler):`,
      line('alone           ', (r) => r.alone),
      line('paced prune     ', (r) => r.duringPacedPrune),
      line('flat-out prune  ', (r) => r.duringPrune),
      `    paced prune (${s.pauseMs} ms between batches of ${s.batchSize}) deleted ${rate((r) => r.pacedPrune)} rows/s; flat out ${rate((r) => r.prune)} rows/s; slowest batch ${Math.max(...i.rounds.map((r) => Math.max(r.pacedPrune.slowestBatchMs, r.prune.slowestBatchMs))).toFixed(0)} ms`,
    );
  }
  lines.push(
    `  machine: ${availableParallelism()} cores; load average ${report.loadAverage.start.toFixed(1)} at start, ${report.loadAverage.end.toFixed(1)} at end`,
  );
  return lines;
}
