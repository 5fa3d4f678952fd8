// The wal scenario: how much WAL, how many WAL flushes and data-page writes each accepted event
// costs PostgreSQL, for the sizing guide (load/README.md). Signed Stripe billing deliveries (the
// load driver's mix, duplicates included) go through a real gateway and workers at a fixed rate;
// the WAL position (pg_current_wal_lsn) is read before the load and after the backlog has
// drained, so every byte the events caused is counted: claims, applies, the relay, pg-boss's
// upkeep and autovacuum alike. pg_walinspect (a superuser's, the embedded PostgreSQL's) splits
// the bytes into records and full-page images per resource manager; a final CHECKPOINT writes
// the data pages the run dirtied, so they can be counted too.
//
// Three phases on one database. Fresh tables with the mix's ids, which follow the run id and so
// fill one narrow range of each index: after a checkpoint, few pages get a first change, so few
// full-page images. Then the inbox pre-filled (BENCH_WAL_PREFILL rows, random ids) and spread ids
// (as providers' random ids are): most inserts touch an index page no one has changed since the
// checkpoint, which costs a full-page image, as on a production inbox much larger than one
// checkpoint interval's inserts. Then the same with wal_compression (lz4 where built in).
//   BENCH_SCENARIOS=wal BENCH_MAJORS=18 BENCH_WAL_RATE=300 BENCH_WAL_SECONDS=30 node bench/run.ts
import { availableParallelism, loadavg } from 'node:os';
import pg from 'pg';
import { drive } from '../load/driver/driver.ts';
import { DEFAULT_MIX, eventAt, mixSettings } from '../load/lib/mix.ts';
import type { BenchDatabase } from './processes.ts';
import { startStack } from './stack.ts';

const SECRET = 'whsec_bench_wal_0c1d2e3f4a5b6c7d8e9f0a1b';
const ENDPOINT = 'billing';

export interface WalSettings {
  readonly rate: number;
  readonly seconds: number;
  readonly workers: number;
  readonly connections: number;
  /** Inbox rows (random ids, settled) written before the steady-state phases. */
  readonly prefill: number;
}

interface ResourceManager {
  readonly name: string;
  readonly records: number;
  readonly recordBytes: number;
  readonly fpiBytes: number;
}

export interface WalPhase {
  readonly label: string;
  /** wal_compression during the phase. */
  readonly walCompression: string;
  readonly spreadIds: boolean;
  /** Inbox rows when the phase started. */
  readonly inboxRowsBefore: number;
  /** Deliveries acknowledged (duplicates included) and events stored (inbox rows). */
  readonly deliveries: number;
  readonly events: number;
  /** From the first arrival to the drained backlog. */
  readonly windowSeconds: number;
  readonly walBytes: number;
  readonly walBytesPerEvent: number;
  readonly walBytesPerDelivery: number;
  /** From pg_walinspect when available (superuser), else pg_stat_wal. */
  readonly walRecordsPerEvent: number;
  readonly fpiPerEvent: number;
  readonly fpiBytesPerEvent: number | null;
  readonly byResourceManager: readonly ResourceManager[] | null;
  readonly commitsPerEvent: number;
  /** WAL written and flushed to disk (writes, fsyncs) over the window: the WAL device's IOPS. */
  readonly walWrites: number;
  readonly walFsyncs: number;
  /** Data pages (8 KiB) written over the window and by a final CHECKPOINT. */
  readonly dataPagesWritten: number;
  readonly checkpointsInWindow: number;
}

export interface WalReport {
  readonly scenario: 'wal';
  readonly settings: WalSettings;
  readonly postgres: Readonly<Record<string, string>>;
  readonly phases: readonly WalPhase[];
  readonly loadAverage: { readonly start: number; readonly end: number };
}

interface Snapshot {
  readonly at: number;
  readonly lsn: string;
  readonly wal: Record<string, number>;
  readonly walIo: { readonly writes: number; readonly fsyncs: number } | null;
  readonly relationWrites: number | null;
  readonly checkpoints: number;
  readonly checkpointBuffers: number;
  readonly commits: number;
}

/** One row of a statistics view as JSON, or null where this PostgreSQL has no such view. */
async function row(db: pg.Client, view: string): Promise<Record<string, number> | null> {
  try {
    return (await db.query<{ row: Record<string, number> }>(`SELECT to_jsonb(v) AS row FROM ${view} v`))
      .rows[0]!.row;
  } catch {
    return null;
  }
}

// PostgreSQL 16 and later count I/O per object in pg_stat_io; 18 counts WAL there too (its
// pg_stat_wal lost wal_write and wal_sync). 15 has neither: pg_stat_wal and pg_stat_bgwriter.
const IO_BY_OBJECT = `
  SELECT object, coalesce(sum(writes), 0)::float8 AS writes, coalesce(sum(fsyncs), 0)::float8 AS fsyncs
    FROM pg_stat_io GROUP BY object`;

async function snapshot(db: pg.Client): Promise<Snapshot> {
  const lsn = (await db.query<{ lsn: string }>('SELECT pg_current_wal_lsn()::text AS lsn')).rows[0]!.lsn;
  const wal = (await row(db, 'pg_stat_wal')) ?? {};
  const io = await db
    .query<{ object: string; writes: number; fsyncs: number }>(IO_BY_OBJECT)
    .catch(() => null);
  const walRow = io?.rows.find((r) => r.object === 'wal');
  const relation = io?.rows.find((r) => r.object === 'relation');
  const checkpointer = await row(db, 'pg_stat_checkpointer');
  const bgwriter = (await row(db, 'pg_stat_bgwriter')) ?? {};
  const commits = (
    await db.query<{ n: number }>(
      'SELECT xact_commit::float8 AS n FROM pg_stat_database WHERE datname = current_database()',
    )
  ).rows[0]!.n;
  return {
    at: Date.now(),
    lsn,
    wal,
    walIo: walRow
      ? { writes: walRow.writes, fsyncs: walRow.fsyncs }
      : 'wal_write' in wal
        ? { writes: Number(wal.wal_write), fsyncs: Number(wal.wal_sync) }
        : null,
    relationWrites: relation
      ? relation.writes
      : 'buffers_checkpoint' in bgwriter
        ? Number(bgwriter.buffers_checkpoint) +
          Number(bgwriter.buffers_clean) +
          Number(bgwriter.buffers_backend)
        : null,
    checkpoints: checkpointer
      ? Number(checkpointer.num_timed) + Number(checkpointer.num_requested)
      : Number(bgwriter.checkpoints_timed ?? 0) + Number(bgwriter.checkpoints_req ?? 0),
    checkpointBuffers: Number(checkpointer?.buffers_written ?? bgwriter.buffers_checkpoint ?? 0),
    commits,
  };
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

/** Statistics are flushed by each backend at most once a second: let the last ones land. */
const settle = () => new Promise((resolve) => setTimeout(resolve, 1_500));

const SETTINGS = [
  'server_version',
  'wal_level',
  'full_page_writes',
  'wal_compression',
  'synchronous_commit',
  'checkpoint_timeout',
  'max_wal_size',
  'shared_buffers',
];

/** Settled inbox rows with random ids and a billing payload, as weeks of retention leave them. */
const PREFILL = `
  INSERT INTO hookgate.inbox
    (endpoint, event_id, provider, event_type, payload, status, attempts, received_at, processed_at, received_via)
  SELECT $1, 'evt_' || md5($2 || g::text), 'stripe', 'invoice.created', $3::jsonb, 'processed', 1,
         now() - interval '1 day', now() - interval '1 day', 'gateway'
    FROM generate_series($4::int, $5::int) AS g`;

async function prefill(db: pg.Client, rows: number): Promise<void> {
  const payload = eventAt('stripe', { id: 'prefill', startedAt: 1_764_460_800 }, 0, DEFAULT_MIX).body;
  for (let from = 1; from <= rows; from += 250_000) {
    await db.query(PREFILL, [ENDPOINT, 'prefill', payload, from, Math.min(rows, from + 249_999)]);
  }
  // Hint bits set and statistics current now, not during the measured window.
  await db.query('VACUUM ANALYZE hookgate.inbox');
}

async function inboxRows(db: pg.Client): Promise<number> {
  return (await db.query<{ n: number }>('SELECT count(*)::int AS n FROM hookgate.inbox')).rows[0]!.n;
}

interface PhasePlan {
  readonly label: string;
  readonly spreadIds: boolean;
}

async function measurePhase(
  db: pg.Client,
  gatewayUrl: string,
  settings: WalSettings,
  plan: PhasePlan,
): Promise<WalPhase> {
  const walCompression = (await db.query<{ v: string }>("SELECT current_setting('wal_compression') AS v"))
    .rows[0]!.v;
  const inboxRowsBefore = await inboxRows(db);
  // Every data page dirtied so far is written now: the run's first change to each page then
  // costs a full-page image, as it does after every checkpoint in production.
  await db.query('CHECKPOINT');
  await settle();
  const before = await snapshot(db);
  const load = await drive({
    baseUrl: gatewayUrl,
    targets: [{ endpoint: ENDPOINT, provider: 'stripe', secret: SECRET }],
    rate: settings.rate,
    seconds: settings.seconds,
    connections: settings.connections,
    maxInFlight: 10_000,
    requestTimeoutMs: 10_000,
    mix: mixSettings({ spreadIds: plan.spreadIds }),
    run: { id: `wal${Date.now().toString(36)}`, startedAt: Math.floor(Date.now() / 1000) },
  });
  if (load.acked === 0) throw new Error(`no delivery was acknowledged: ${load.firstFailure}`);
  await waitForDrain(db, 180_000);
  await settle();
  const after = await snapshot(db);
  const events = (await inboxRows(db)) - inboxRowsBefore;
  const walBytes = Number(
    (
      await db.query<{ bytes: string }>('SELECT pg_wal_lsn_diff($2::pg_lsn, $1::pg_lsn)::text AS bytes', [
        before.lsn,
        after.lsn,
      ])
    ).rows[0]!.bytes,
  );
  let byResourceManager: ResourceManager[] | null = null;
  try {
    await db.query('CREATE EXTENSION IF NOT EXISTS pg_walinspect');
    const stats = await db.query<{ name: string; records: number; record_bytes: number; fpi_bytes: number }>(
      `SELECT "resource_manager/record_type" AS name, count::float8 AS records,
              record_size::float8 AS record_bytes, fpi_size::float8 AS fpi_bytes
         FROM pg_get_wal_stats($1::pg_lsn, $2::pg_lsn, false)
        WHERE count > 0 ORDER BY combined_size DESC`,
      [before.lsn, after.lsn],
    );
    byResourceManager = stats.rows.map((r) => ({
      name: r.name,
      records: r.records,
      recordBytes: r.record_bytes,
      fpiBytes: r.fpi_bytes,
    }));
  } catch {
    // Not a superuser, or no pg_walinspect: pg_stat_wal's counts below still hold.
  }
  // The pages the run dirtied and no one has written yet.
  await db.query('CHECKPOINT');
  await settle();
  const flushed = await snapshot(db);
  const per = (n: number) => n / events;
  const delta = (key: string) => Number(after.wal[key] ?? 0) - Number(before.wal[key] ?? 0);
  const records = byResourceManager?.reduce((total, r) => total + r.records, 0) ?? delta('wal_records');
  return {
    label: plan.label,
    walCompression,
    spreadIds: plan.spreadIds,
    inboxRowsBefore,
    deliveries: load.acked,
    events,
    windowSeconds: (after.at - before.at) / 1000,
    walBytes,
    walBytesPerEvent: per(walBytes),
    walBytesPerDelivery: walBytes / load.acked,
    walRecordsPerEvent: per(records),
    fpiPerEvent: per(delta('wal_fpi')),
    fpiBytesPerEvent: byResourceManager ? per(byResourceManager.reduce((t, r) => t + r.fpiBytes, 0)) : null,
    byResourceManager:
      byResourceManager?.map((r) => ({
        name: r.name,
        records: per(r.records),
        recordBytes: per(r.recordBytes),
        fpiBytes: per(r.fpiBytes),
      })) ?? null,
    commitsPerEvent: per(after.commits - before.commits),
    walWrites: after.walIo && before.walIo ? after.walIo.writes - before.walIo.writes : Number.NaN,
    walFsyncs: after.walIo && before.walIo ? after.walIo.fsyncs - before.walIo.fsyncs : Number.NaN,
    dataPagesWritten:
      flushed.relationWrites !== null && before.relationWrites !== null
        ? flushed.relationWrites - before.relationWrites
        : flushed.checkpointBuffers - before.checkpointBuffers,
    checkpointsInWindow: after.checkpoints - before.checkpoints,
  };
}

/** lz4 or zstd when this PostgreSQL was built with them, else its own pglz. */
async function bestCompression(db: pg.Client): Promise<string> {
  const values = (
    await db.query<{ enumvals: string[] | null }>(
      "SELECT enumvals FROM pg_settings WHERE name = 'wal_compression'",
    )
  ).rows[0]?.enumvals ?? ['pglz'];
  return ['lz4', 'zstd', 'pglz'].find((value) => values.includes(value)) ?? 'on';
}

export async function walScenario(database: BenchDatabase, settings: WalSettings): Promise<WalReport> {
  const loadAtStart = loadavg()[0]!;
  const db = new pg.Client({ connectionString: database.url, application_name: 'bench-wal' });
  await db.connect();
  try {
    const postgres = Object.fromEntries(
      (
        await db.query<{ name: string; setting: string }>(
          'SELECT name, current_setting(name) AS setting FROM unnest($1::text[]) AS name',
          [SETTINGS],
        )
      ).rows.map((r) => [r.name, r.setting]),
    );
    const stack = await startStack(
      database.url,
      {
        worker: { pollingInterval: '200ms' },
        endpoints: { [ENDPOINT]: { provider: 'stripe', secrets: [SECRET], handler: 'billing' } },
      },
      settings.workers,
    );
    const phases: WalPhase[] = [];
    try {
      phases.push(
        await measurePhase(db, stack.gatewayUrl, settings, {
          label: 'fresh tables, ids in one range after the run id',
          spreadIds: false,
        }),
      );
      if (settings.prefill > 0) {
        await prefill(db, settings.prefill);
        phases.push(
          await measurePhase(db, stack.gatewayUrl, settings, {
            label: `inbox pre-filled with ${settings.prefill} rows, spread ids`,
            spreadIds: true,
          }),
        );
        // Changing wal_compression needs a superuser; without one the phase is left out.
        const compression = await bestCompression(db);
        const altered = await db
          .query(`ALTER SYSTEM SET wal_compression = '${compression}'`)
          .then(() => db.query('SELECT pg_reload_conf()'))
          .then(
            () => true,
            () => false,
          );
        if (altered) {
          try {
            await settle();
            phases.push(
              await measurePhase(db, stack.gatewayUrl, settings, {
                label: `the same, wal_compression = ${compression}`,
                spreadIds: true,
              }),
            );
          } finally {
            await db.query('ALTER SYSTEM RESET wal_compression');
            await db.query('SELECT pg_reload_conf()');
          }
        }
      }
    } finally {
      await stack.stop();
    }
    return {
      scenario: 'wal',
      settings,
      postgres,
      phases,
      loadAverage: { start: loadAtStart, end: loadavg()[0]! },
    };
  } finally {
    await db.end();
  }
}

const kib = (bytes: number) => `${(bytes / 1024).toFixed(2)} KiB`;

export function renderWal(report: WalReport): string[] {
  const s = report.settings;
  const p = report.postgres;
  const lines = [
    `wal: Stripe billing events at ${s.rate}/s for ${s.seconds}s per phase (the load mix with duplicates), 1 gateway + ${s.workers} workers, each phase counted from a CHECKPOINT to the drained backlog`,
    `  PostgreSQL ${p.server_version}: wal_level ${p.wal_level}, full_page_writes ${p.full_page_writes}, synchronous_commit ${p.synchronous_commit}, checkpoint_timeout ${p.checkpoint_timeout}, max_wal_size ${p.max_wal_size}, shared_buffers ${p.shared_buffers}`,
  ];
  for (const phase of report.phases) {
    const perSecond = (n: number) => n / phase.windowSeconds;
    lines.push(
      `  ${phase.label} (wal_compression ${phase.walCompression}; ${phase.inboxRowsBefore} inbox rows before; ${phase.events} events from ${phase.deliveries} deliveries in ${phase.windowSeconds.toFixed(1)}s; ${phase.checkpointsInWindow} checkpoint(s) in the window)`,
      `    WAL per event: ${kib(phase.walBytesPerEvent)} (${kib(phase.walBytesPerDelivery)} per delivery), ${phase.walRecordsPerEvent.toFixed(1)} records, ${phase.fpiPerEvent.toFixed(2)} full-page images${phase.fpiBytesPerEvent === null ? '' : ` (${kib(phase.fpiBytesPerEvent)} of the bytes)`}`,
      `    commits ${phase.commitsPerEvent.toFixed(2)} per event; WAL writes ${phase.walWrites} and flushes ${phase.walFsyncs}: ${perSecond(phase.walFsyncs).toFixed(0)} flushes/s at this rate (${(phase.walFsyncs / phase.events).toFixed(3)} per event)`,
      `    data pages written (8 KiB, in the window and by the final CHECKPOINT): ${phase.dataPagesWritten} (${(phase.dataPagesWritten / phase.events).toFixed(3)} per event)`,
    );
    if (phase.byResourceManager) {
      lines.push(
        `    per event by resource manager: ${phase.byResourceManager
          .slice(0, 5)
          .map((r) => `${r.name} ${r.recordBytes.toFixed(0)} B + FPI ${r.fpiBytes.toFixed(0)} B`)
          .join(', ')}`,
      );
    }
    const at2000 = phase.walBytesPerEvent * 2_000;
    lines.push(
      `    at 2 000 events/s: ${(at2000 / 1024 ** 2).toFixed(1)} MiB/s of WAL, ${((at2000 * 86_400) / 1024 ** 3).toFixed(0)} GiB a day`,
    );
  }
  lines.push(
    `  machine: ${availableParallelism()} cores; load average ${report.loadAverage.start.toFixed(1)} at start, ${report.loadAverage.end.toFixed(1)} at end`,
  );
  return lines;
}
