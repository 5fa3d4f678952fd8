// The long-run check: one gateway process, started on an empty database, under closed-loop load
// until the inbox has passed a size (100 000 rows by default), then 10 s more. A statement whose
// plan was made while the tables were small and kept (a named prepared statement) would make
// each claim cost more as the inbox grows: the rate at the end would fall below the rate at the
// start. PostgreSQL 15 once did exactly that (the claim read the whole inbox per batch). The
// figure is a ratio within the run: the last window's accepted rate over the first window's,
// with the inbox's and the job table's sequential scans over the run beside it.
import { randomUUID } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import pg from 'pg';
import { Webhook } from 'standardwebhooks';
import { freePort } from '../services/core/db/embedded.ts';
import { cpuWindow, perThousand, postgresCpu, postmasterPid, processCpu } from './cpu.ts';
import { drive, type LoadResult, type PreparedRequest } from './load.ts';
import { type BenchDatabase, ROOT, startProcess, stopProcess } from './processes.ts';

/** The goal: the rate past the size is at least this share of the rate from an empty database. */
export const LONGRUN_GOAL = 0.9;
const SECRET = 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw';

export interface LongrunWindow extends LoadResult {
  readonly inboxRowsAfter: number;
  readonly cpuPer1k: Record<string, number>;
}

export interface LongrunReport {
  readonly scenario: 'longrun';
  readonly major: number;
  readonly settings: { connections: number; windowSeconds: number; rows: number };
  readonly windows: readonly LongrunWindow[];
  readonly first: LongrunWindow;
  readonly last: LongrunWindow;
  readonly ratio: number;
  /** PostgreSQL's CPU per accepted delivery, last window over first: what the rate hides on a busy machine. */
  readonly postgresCpuRatio: number;
  /** Sequential scans over the whole run (pg_stat_user_tables), and the rows they read. */
  readonly seqScans: Record<string, { scans: number; rowsRead: number }>;
}

/** Unique signed deliveries, 20 % repeats of earlier ones, generated per window (never wrapping). */
function deliveries(count: number, start: number): PreparedRequest[] {
  const webhook = new Webhook(SECRET);
  const now = new Date();
  const list: PreparedRequest[] = [];
  for (let i = 0; i < count; i += 1) {
    const n = start + i;
    const repeat = i % 5 === 4 && list.length > 0;
    if (repeat) {
      list.push(list[Math.floor(Math.random() * list.length)]!);
      continue;
    }
    const id = `msg_${randomUUID()}`;
    const body = JSON.stringify({ type: 'invoice.paid', data: { id: `in_${n}`, amount_paid: 4200 } });
    list.push({
      body,
      headers: {
        'content-type': 'application/json',
        'webhook-id': id,
        'webhook-timestamp': String(Math.floor(now.getTime() / 1000)),
        'webhook-signature': webhook.sign(id, now, body),
      },
    });
  }
  return list;
}

const SCANS = `
  SELECT schemaname || '.' || relname AS name, COALESCE(seq_scan, 0)::bigint AS scans,
         COALESCE(seq_tup_read, 0)::bigint AS rows_read
    FROM pg_stat_user_tables
   WHERE (schemaname = 'hookgate' AND relname IN ('inbox', 'delivery_counts'))
      OR (schemaname = 'pgboss' AND relname LIKE 'job%')`;

async function scans(db: pg.Client): Promise<Map<string, { scans: number; rowsRead: number }>> {
  // Statistics are sent by backends at intervals: ask for a fresh snapshot.
  await db.query('SELECT pg_stat_clear_snapshot()');
  const { rows } = await db.query<{ name: string; scans: string; rows_read: string }>(SCANS);
  return new Map(
    rows.map((row) => [row.name, { scans: Number(row.scans), rowsRead: Number(row.rows_read) }]),
  );
}

export async function longrunScenario(
  database: BenchDatabase,
  settings: { connections: number; windowSeconds: number; rows: number; maxWindows: number },
): Promise<LongrunReport> {
  const configFile = join(ROOT, 'bench', 'longrun.yaml');
  writeFileSync(
    configFile,
    `endpoints:\n  bench:\n    provider: standard-webhooks\n    secrets: ["${SECRET}"]\n    handler: record\n`,
  );
  const db = new pg.Client({ connectionString: database.url });
  await db.connect();
  const version = await db.query<{ v: string }>(`SELECT current_setting('server_version_num') AS v`);
  const major = Math.floor(Number(version.rows[0]!.v) / 10_000);
  const postmaster = await postmasterPid(db);
  const port = await freePort();
  const metricsPort = await freePort();
  const gateway = await startProcess(
    ['services/cli/main.ts', 'serve', '--role', 'gateway', '--config', configFile],
    {
      DATABASE_URL: database.url,
      PORT: String(port),
      METRICS_PORT: String(metricsPort),
      LOG_LEVEL: 'warn',
    },
    `http://127.0.0.1:${port}/readyz`,
  );
  const windows: LongrunWindow[] = [];
  const before = await scans(db);
  let sent = 0;
  try {
    const url = `http://127.0.0.1:${port}/webhooks/bench`;
    // From the gateway's own counter: a count(*) of the inbox would add sequential scans of its
    // own to the figures this scenario reports.
    const inboxRows = async () => {
      const text = await (await fetch(`http://127.0.0.1:${metricsPort}/metrics`)).text();
      const accepted = /^hookgate_deliveries_total\{[^}]*outcome="accepted"[^}]*\} (\S+)$/m.exec(text);
      return Number(accepted?.[1] ?? 0);
    };
    // Two seconds of warm-up (JIT, pools) before the first window, a few thousand rows.
    const warm = await drive(url, deliveries(10_000, 0), { connections: settings.connections, seconds: 2 });
    sent += warm.requests;
    // Windows until the inbox has passed the size, then one more: that last one is measured.
    for (let n = 0; n < settings.maxWindows; n += 1) {
      const requests = deliveries(Math.max(20_000, settings.windowSeconds * 12_000), sent);
      const done = cpuWindow({
        gateway: () => processCpu(gateway.pid),
        postgres: () => postgresCpu(postmaster),
        generator: () => processCpu(process.pid),
      });
      const result = await drive(url, requests, {
        connections: settings.connections,
        seconds: settings.windowSeconds,
      });
      sent += result.requests;
      const rows = await inboxRows();
      windows.push({ ...result, inboxRowsAfter: rows, cpuPer1k: perThousand(done(), result.ok) });
      const passed = windows.findIndex((w) => w.inboxRowsAfter >= settings.rows);
      if (passed !== -1 && passed < windows.length - 1) break;
    }
  } finally {
    await stopProcess(gateway);
  }
  const after = await scans(db);
  await db.end();
  const seqScans: Record<string, { scans: number; rowsRead: number }> = {};
  for (const [name, counts] of after) {
    const earlier = before.get(name) ?? { scans: 0, rowsRead: 0 };
    seqScans[name] = { scans: counts.scans - earlier.scans, rowsRead: counts.rowsRead - earlier.rowsRead };
  }
  const first = windows[0]!;
  const last = windows[windows.length - 1]!;
  return {
    scenario: 'longrun',
    major,
    settings: {
      connections: settings.connections,
      windowSeconds: settings.windowSeconds,
      rows: settings.rows,
    },
    windows,
    first,
    last,
    ratio: last.okPerSecond / first.okPerSecond,
    postgresCpuRatio: (last.cpuPer1k.postgres ?? Number.NaN) / (first.cpuPer1k.postgres ?? Number.NaN),
    seqScans,
  };
}

export function renderLongrun(report: LongrunReport): string[] {
  const { connections, windowSeconds, rows } = report.settings;
  const line = (label: string, w: LongrunWindow) =>
    `  ${label} ${w.okPerSecond.toFixed(0).padStart(7)}/s  p99 ${w.p99Ms.toFixed(1).padStart(6)} ms  inbox after ${String(w.inboxRowsAfter).padStart(8)}  ` +
    `CPU s/1k: gateway ${(w.cpuPer1k.gateway ?? Number.NaN).toFixed(3)} postgres ${(w.cpuPer1k.postgres ?? Number.NaN).toFixed(3)}`;
  const beforeLast = report.windows[report.windows.length - 2];
  const passed = beforeLast !== undefined && beforeLast.inboxRowsAfter >= rows;
  return [
    `longrun on PostgreSQL ${report.major}: one gateway from an empty database, ${connections} connections, ${windowSeconds}s windows until the inbox passed ${rows} rows, then one more`,
    ...report.windows.map((w, i) => line(`window ${String(i + 1).padStart(2)}`, w)),
    line('first    ', report.first),
    line('last     ', report.last),
    `  accepted/s, last / first: ${report.ratio.toFixed(2)}   (goal >= ${LONGRUN_GOAL})${passed ? '' : `   (the inbox did not pass ${rows} rows before the last window: raise BENCH_LONGRUN_WINDOWS)`}`,
    `  PostgreSQL CPU per accepted delivery, last / first: ${report.postgresCpuRatio.toFixed(2)}   (a plan that reads the growing tables pushes this up; rates move with the machine's other load, CPU per delivery much less)`,
    `  sequential scans over the run: ${
      Object.entries(report.seqScans)
        .filter(([, c]) => c.scans > 0)
        .map(([name, c]) => `${name} ${c.scans} (${c.rowsRead} rows read)`)
        .join(', ') || 'none of the inbox, delivery counts or job tables'
    }`,
  ];
}
