// PostgreSQL's ceiling for hookgate's write path: pgbench running hookgate's own claim
// statement (CLAIM_INBOX_ROWS) alone, one transaction per batch, as the gateway's group
// commit does, with no HTTP, no verification and no job insert in front of it.
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { availableParallelism, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import pg from 'pg';
import { CLAIM_INBOX_ROWS } from '../services/core/inbox/claim-sql.ts';
import { cpuWindow, per1k, postgresCpu, postmasterPid } from './cpu.ts';
import type { BenchDatabase } from './processes.ts';

const run = promisify(execFile);

export interface PgbenchRun {
  readonly batch: number;
  readonly clients: number;
  readonly seconds: number;
  readonly transactionsPerSecond: number;
  readonly rowsPerSecond: number;
  readonly latencyMs: number;
  /** PostgreSQL's CPU seconds (all its processes, from /proc) per 1 000 rows claimed. */
  readonly postgresCpuPer1kRows: number;
  /** PostgreSQL's CPU use over the run, in cores. */
  readonly postgresCores: number;
}

export interface PgbenchReport {
  readonly scenario: 'pgbench';
  readonly pgbench: string | null;
  readonly skipped: string | null;
  readonly statement: string;
  readonly runs: readonly PgbenchRun[];
  readonly cores: number;
  readonly loadAverage: { readonly start: number; readonly end: number };
}

const PAYLOAD = JSON.stringify({
  id: 'evt_pgbench',
  object: 'event',
  type: 'invoice.paid',
  data: {
    object: {
      id: 'in_pgbench',
      object: 'invoice',
      customer: 'cus_pgbench',
      status: 'paid',
      currency: 'eur',
      amount_due: 4200,
      amount_paid: 4200,
      status_transitions: { paid_at: 1764460800, voided_at: null },
    },
  },
  // A space after every colon: pgbench would read `:null` as one of its variables.
}).replaceAll('":', '": ');

/**
 * The claim statement with its array parameters built in SQL for a batch of `batch` rows;
 * the event ids come from pgbench's client id and a random number per transaction.
 */
export function claimScript(batch: number): string {
  const arrays: Record<string, string> = {
    $1: `array_fill('pgbench'::text, ARRAY[${batch}])`,
    $2: `ARRAY(SELECT 'pgb_' || :client_id || '_' || :r || '_' || g FROM generate_series(1, ${batch}) AS g)`,
    $3: `array_fill('stripe'::text, ARRAY[${batch}])`,
    $4: `array_fill('invoice.paid'::text, ARRAY[${batch}])`,
    $5: `array_fill(NULL::text, ARRAY[${batch}])`,
    $6: `array_fill(NULL::text, ARRAY[${batch}])`,
    $7: `array_fill(NULL::bigint, ARRAY[${batch}])`,
    $8: `array_fill('${PAYLOAD}'::jsonb, ARRAY[${batch}])`,
    $9: `array_fill('{}'::jsonb, ARRAY[${batch}])`,
    $10: `array_fill(NULL::text, ARRAY[${batch}])`,
    $11: `array_fill(false, ARRAY[${batch}])`,
    $12: `array_fill(NULL::text, ARRAY[${batch}])`,
    $13: `array_fill(NULL::uuid, ARRAY[${batch}])`,
    $14: `array_fill(NULL::boolean, ARRAY[${batch}])`,
  };
  const sql = CLAIM_INBOX_ROWS.replace(/\$(\d+)::\w+\[\]/g, (match, n: string) => {
    const replacement = arrays[`$${n}`];
    if (!replacement) throw new Error(`the claim statement has an unexpected parameter ${match}`);
    return replacement;
  });
  return `\\set r random(1, 1000000000000)\n${sql.trim().replace(/\s+/g, ' ')};\n`;
}

export async function pgbenchScenario(
  database: BenchDatabase,
  settings: { seconds: number; clients: number; batches: readonly number[] },
): Promise<PgbenchReport> {
  const loadAtStart = loadavg()[0]!;
  const binary = process.env.PGBENCH ?? 'pgbench';
  let version: string;
  try {
    version = (await run(binary, ['--version'])).stdout.trim();
  } catch {
    return {
      scenario: 'pgbench',
      pgbench: null,
      skipped: `${binary} not found (install postgresql-client, or set PGBENCH)`,
      statement: CLAIM_INBOX_ROWS,
      runs: [],
      cores: availableParallelism(),
      loadAverage: { start: loadAtStart, end: loadavg()[0]! },
    };
  }
  const db = new pg.Client({ connectionString: database.url });
  await db.connect();
  const dir = mkdtempSync(join(tmpdir(), 'hookgate-pgbench-'));
  const runs: PgbenchRun[] = [];
  try {
    const postmaster = await postmasterPid(db);
    for (const batch of settings.batches) {
      await db.query('TRUNCATE hookgate.inbox');
      await db.query('VACUUM ANALYZE hookgate.inbox');
      await db.query('CHECKPOINT');
      const script = join(dir, `claim-${batch}.sql`);
      writeFileSync(script, claimScript(batch));
      const done = cpuWindow({ postgres: () => postgresCpu(postmaster) });
      const started = performance.now();
      const { stdout } = await run(
        binary,
        [
          '-n',
          '-M',
          'prepared',
          '-f',
          script,
          '-c',
          String(settings.clients),
          '-j',
          String(Math.min(settings.clients, availableParallelism())),
          '-T',
          String(settings.seconds),
          database.url,
        ],
        { maxBuffer: 16 * 1024 * 1024 },
      );
      const wall = (performance.now() - started) / 1000;
      const cpu = done().postgres!;
      const tps = Number(/tps = ([\d.]+)/.exec(stdout)?.[1]);
      const latency = Number(/latency average = ([\d.]+) ms/.exec(stdout)?.[1]);
      const rows = (await db.query<{ n: number }>('SELECT count(*)::int AS n FROM hookgate.inbox')).rows[0]!
        .n;
      runs.push({
        batch,
        clients: settings.clients,
        seconds: settings.seconds,
        transactionsPerSecond: tps,
        rowsPerSecond: tps * batch,
        latencyMs: latency,
        postgresCpuPer1kRows: per1k(cpu, rows),
        postgresCores: Math.round((cpu / wall) * 100) / 100,
      });
    }
    await db.query('TRUNCATE hookgate.inbox');
  } finally {
    await db.end();
    rmSync(dir, { recursive: true, force: true });
  }
  return {
    scenario: 'pgbench',
    pgbench: version,
    skipped: null,
    statement: CLAIM_INBOX_ROWS,
    runs,
    cores: availableParallelism(),
    loadAverage: { start: loadAtStart, end: loadavg()[0]! },
  };
}

export function renderPgbench(report: PgbenchReport): string[] {
  if (report.skipped) return [`pgbench: skipped: ${report.skipped}`];
  const fmt = (n: number, digits = 0) => n.toFixed(digits).padStart(10);
  return [
    `pgbench: hookgate's claim statement alone (INSERT … FROM unnest … ON CONFLICT DO NOTHING RETURNING), one transaction per batch; ${report.pgbench}`,
    '  batch  clients     tx/s     rows/s  latency ms  PG CPU s/1k rows  PG cores',
    ...report.runs.map(
      (r) =>
        `  ${String(r.batch).padStart(5)}  ${String(r.clients).padStart(7)}${fmt(r.transactionsPerSecond)} ${fmt(r.rowsPerSecond)}${fmt(r.latencyMs, 2)}  ${fmt(r.postgresCpuPer1kRows, 3)}      ${r.postgresCores.toFixed(2)}`,
    ),
    `  machine: ${report.cores} cores; load average ${report.loadAverage.start.toFixed(1)} at start, ${report.loadAverage.end.toFixed(1)} at end`,
  ];
}
