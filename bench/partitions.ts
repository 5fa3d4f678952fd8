// The partitions scenario: what retention of one partition costs on the partitioned inbox
// (migration 0021) as the inbox grows, against the DELETE-based retention it replaced, and what it
// does to the claim's latency while it runs. Every dropped partition holds the same number of rows
// at every inbox size, so a flat cost across sizes is what "flat" means here.
//
// How the inbox is built (partitions only exist forward through hookgate.inbox_create_partitions,
// and a per-row trigger at 100 M rows would take hours on two cores): as the database owner, the
// empty table a fresh install converts (inbox_unpartitioned, covering everything before its
// boundary) is dropped with hookgate.inbox_drop_partition, and past partitions INBOX_PARTITION_DAYS
// wide are created with CREATE TABLE ... PARTITION OF plus their row in hookgate.inbox_partitions,
// named as the function names them. Thin rows (payload '{}', all 'processed') go straight into
// hookgate.inbox with session_replication_role = replica (no trigger fires), and the keys the
// insert trigger (inbox_claim_key) would have written go into hookgate.inbox_keys in bulk from the
// same rows.
//
// The baseline is the path before 0021: an unpartitioned copy of the inbox (its columns and
// indexes, the old primary key, no triggers) holding the smallest size's rows, pruned by the old
// statement (PRUNE_INBOX_BATCH before baba7a5: ctid batches by received_at from a cursor).
import { randomUUID } from 'node:crypto';
import { availableParallelism, loadavg } from 'node:os';
import pg from 'pg';
import { pruneInBatches } from '../services/core/db/batched-delete.ts';
import { type Claim, claimDocument } from '../services/core/inbox/claim.ts';
import { CLAIM_IN_ONE_STATEMENT, CLAIM_STATEMENT_NAME } from '../services/core/inbox/claim-sql.ts';
import {
  COUNT_PRUNABLE_INBOX_ROWS,
  dropExpiredPartitions,
  INBOX_PARTITION_DAYS,
  type PartitionDrop,
  PRUNE_INBOX_ROWS_BATCH,
  pruneInboxKeys,
} from '../services/core/inbox/partitions.ts';
import { createBoss } from '../services/core/queue/boss.ts';
import { ensureQueues } from '../services/core/queue/queues.ts';
import { WAKEUP_CHANNEL } from '../services/core/queue/wakeup.ts';
import { per1k, postgresCpu, postmasterPid } from './cpu.ts';
import type { BenchDatabase } from './processes.ts';

const DAY = 86_400_000;
/** A partition's width, as inbox_create_partitions makes them. */
const SPAN = INBOX_PARTITION_DAYS * DAY;
const ENDPOINT = 'billing';
const FLAT = 'hookgate.bench_inbox_flat';
/** Deliveries of the claim load re-sent among the new ones, as in the claim scenario. */
const DUPLICATE_SHARE = 0.2;

export interface PartitionsSettings {
  /** Inbox sizes (rows), built one after the other by adding older partitions. */
  readonly rows: readonly number[];
  /** Rows in each partition (every size is a whole number of such partitions). */
  readonly rowsPerPartition: number;
  /** Rows per statement of the keys pass and of the DELETE baseline. */
  readonly batchSize: number;
  /** Claim load: claims per second (one delivery each), connections, seconds per window. */
  readonly rate: number;
  readonly connections: number;
  readonly seconds: number;
  /** A size whose build would take the database past this many bytes is skipped, not built. */
  readonly maxBytes: number;
  /** A size whose build would take longer than this (at the rate measured so far) is skipped. */
  readonly maxBuildSeconds: number;
}

export interface Timed {
  readonly seconds: number;
  /** PostgreSQL's CPU seconds (postmaster and all its children). */
  readonly postgresCpu: number;
  /** PostgreSQL CPU seconds per 1 000 events removed (NaN when none). */
  readonly cpuPer1k: number;
}

export interface PartitionRetention {
  readonly partition: string;
  readonly drop: Timed & { readonly result: readonly PartitionDrop[] };
  /** PRUNE_INBOX_ROWS_BATCH over rows no range partition holds (none here: measured as it runs). */
  readonly rowsPass: Timed & { readonly rows: number };
  readonly keysPass: Timed & { readonly keys: number };
  readonly total: Timed;
}

export interface DeleteRetention extends Timed {
  readonly rows: number;
  readonly batches: number;
}

export interface LoadWindow {
  readonly label: 'alone' | 'partition drop + keys pass' | 'DELETE baseline';
  readonly claims: number;
  readonly seconds: number;
  /** From each claim's scheduled start (a stall delays the claims behind it: they count too). */
  readonly p50Ms: number;
  readonly p99Ms: number;
  readonly maxMs: number;
  /** Claims scheduled while the retention ran, and their percentiles (null without retention). */
  readonly overlap: { readonly claims: number; readonly p50Ms: number; readonly p99Ms: number } | null;
  readonly retentionSeconds: number | null;
  readonly errors: number;
}

export interface PartitionsSize {
  readonly rows: number;
  readonly partitions: number;
  readonly buildSeconds: number;
  /** hookgate.inbox (all partitions) and hookgate.inbox_keys, with their indexes. */
  readonly inboxBytes: number;
  readonly keysBytes: number;
  readonly retention: PartitionRetention;
  readonly baseline: DeleteRetention;
  /** Partitioned retention (drop + rows pass + keys pass) over the DELETE baseline. */
  readonly ratios: { readonly seconds: number; readonly postgresCpu: number };
  readonly load: readonly LoadWindow[] | null;
}

export interface PartitionsReport {
  readonly scenario: 'partitions';
  readonly settings: PartitionsSettings;
  readonly build: string;
  readonly baselineTable: { readonly rows: number; readonly bytes: number; readonly buildSeconds: number };
  readonly sizes: readonly PartitionsSize[];
  readonly skipped: readonly { readonly rows: number; readonly reason: string }[];
  readonly loadAverage: { readonly start: number; readonly end: number };
}

const BUILD =
  'thin rows (payload {}, processed) by generate_series straight into hookgate.inbox with session_replication_role = replica, keys bulk-inserted into hookgate.inbox_keys from the same rows (what inbox_claim_key writes); past partitions (INBOX_PARTITION_DAYS wide) created as the owner (CREATE TABLE ... PARTITION OF + hookgate.inbox_partitions row), the empty inbox_unpartitioned dropped first';

/** $1 rows, event ids from $2, spread evenly over the $4 days from $3. */
const FILL = `
  INSERT INTO hookgate.inbox
    (endpoint, event_id, provider, event_type, payload, status, attempts, received_at, processed_at)
  SELECT '${ENDPOINT}', 'e' || ($2::bigint + n), 'stripe', 't', '{}'::jsonb, 'processed', 1, t, t
    FROM generate_series(0, $1::int - 1) AS n,
         LATERAL (SELECT $3::timestamptz + (n::float8 / $1::int) * make_interval(days => $4::int)) AS at(t)`;

/** The keys inbox_claim_key would have written for the rows of one partition. */
const KEYS_OF = (partition: string) => `
  INSERT INTO hookgate.inbox_keys (endpoint, event_id, body_digest, received_at)
  SELECT endpoint, event_id, body_digest, received_at FROM hookgate.${partition}`;

/** The old retention statement (services/core/inbox/prune.ts before baba7a5), on the flat copy. */
const OLD_PRUNE_BATCH = `
  WITH gone AS (
    DELETE FROM ${FLAT}
     WHERE ctid = ANY (ARRAY(
             SELECT ctid
               FROM ${FLAT}
              WHERE received_at >= $1::timestamptz AND received_at < $2::timestamptz
                AND status IN ('processed', 'ignored', 'stale')
              ORDER BY received_at
              LIMIT $3))
       AND status IN ('processed', 'ignored', 'stale')
    RETURNING received_at
  )
  SELECT count(*)::int AS deleted, max(received_at)::text AS last FROM gone`;

/** Progress on stderr: a large size builds for many minutes before it prints anything. */
const progress = (text: string) => process.stderr.write(`partitions: ${new Date().toISOString()} ${text}\n`);

const partitionName = (from: Date) => `inbox_p${from.toISOString().slice(0, 10).replaceAll('-', '')}`;

function timed(seconds: number, cpu: number, events: number): Timed {
  return { seconds, postgresCpu: cpu, cpuPer1k: per1k(cpu, events) };
}

interface Meter {
  run<T>(work: () => Promise<T>): Promise<{ value: T; seconds: number; cpu: number }>;
}

/** Times work and PostgreSQL's CPU over it (the postmaster and all its children). */
function meterOf(postmaster: number | null): Meter {
  return {
    async run(work) {
      const cpu = postgresCpu(postmaster);
      const started = performance.now();
      const value = await work();
      return { value, seconds: (performance.now() - started) / 1000, cpu: postgresCpu(postmaster) - cpu };
    },
  };
}

/** Creates the partition [from, to) as the owner, named as inbox_create_partitions names it. */
async function createPartition(db: pg.Client, from: Date, to: Date): Promise<string> {
  const name = partitionName(from);
  await db.query(
    `CREATE TABLE hookgate.${name} PARTITION OF hookgate.inbox FOR VALUES FROM ('${from.toISOString()}') TO ('${to.toISOString()}')`,
  );
  await db.query('INSERT INTO hookgate.inbox_partitions (name, from_at, to_at) VALUES ($1, $2, $3)', [
    name,
    from,
    to,
  ]);
  return name;
}

let nextEventId = 0;

/** Fills one partition and its keys (one transaction each); vacuumed so reads see a settled table. */
async function fillPartition(db: pg.Client, from: Date, rows: number): Promise<void> {
  const name = await createPartition(db, from, new Date(from.getTime() + SPAN));
  await db.query('SET session_replication_role = replica');
  try {
    await db.query(FILL, [rows, nextEventId, from, INBOX_PARTITION_DAYS]);
  } finally {
    await db.query('SET session_replication_role = DEFAULT');
  }
  nextEventId += rows;
  await db.query(KEYS_OF(name));
  await db.query(`VACUUM (ANALYZE) hookgate.${name}`);
}

async function oldestFilled(db: pg.Client): Promise<Date> {
  return (await db.query<{ from_at: Date }>('SELECT min(from_at) AS from_at FROM hookgate.inbox_partitions'))
    .rows[0]!.from_at;
}

async function bytesOf(db: pg.Client): Promise<{ inbox: number; keys: number; flat: number }> {
  const row = (
    await db.query<{ inbox: string; keys: string; flat: string | null }>(`
      SELECT (SELECT sum(pg_total_relation_size(c.oid)) FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
               WHERE i.inhparent = 'hookgate.inbox'::regclass)::text AS inbox,
             pg_total_relation_size('hookgate.inbox_keys')::text AS keys,
             (SELECT pg_total_relation_size(oid) FROM pg_class WHERE oid = to_regclass('${FLAT}'))::text AS flat`)
  ).rows[0]!;
  return { inbox: Number(row.inbox), keys: Number(row.keys), flat: Number(row.flat ?? 0) };
}

/** Retention of the oldest partition, as pruneInbox runs it, each step timed on its own. */
async function partitionRetention(
  pool: pg.Pool,
  meter: Meter,
  batchSize: number,
): Promise<PartitionRetention> {
  const oldest = (
    await pool.query<{ name: string; to_at: Date }>(
      'SELECT name, to_at FROM hookgate.inbox_partitions ORDER BY to_at LIMIT 1',
    )
  ).rows[0]!;
  const rows = Number(
    (await pool.query<{ n: string }>(`SELECT count(*)::text AS n FROM hookgate.${oldest.name}`)).rows[0]!.n,
  );
  const cutoff = oldest.to_at;
  const drop = await meter.run(() => dropExpiredPartitions(pool, cutoff));
  // pruneInBatches computes its cutoff as now() minus the window: the window that ends at `cutoff`.
  const olderThan = Date.now() - cutoff.getTime();
  const rowsPass = await meter.run(() =>
    pruneInBatches(
      pool,
      'inbox',
      { batch: PRUNE_INBOX_ROWS_BATCH, count: COUNT_PRUNABLE_INBOX_ROWS },
      { olderThan, batchSize },
    ),
  );
  const keysPass = await meter.run(() => pruneInboxKeys(pool, { now: cutoff, horizonMs: 0, batchSize }));
  const seconds = drop.seconds + rowsPass.seconds + keysPass.seconds;
  const cpu = drop.cpu + rowsPass.cpu + keysPass.cpu;
  return {
    partition: oldest.name,
    drop: { ...timed(drop.seconds, drop.cpu, rows), result: drop.value },
    rowsPass: { ...timed(rowsPass.seconds, rowsPass.cpu, rowsPass.value.rows), rows: rowsPass.value.rows },
    keysPass: { ...timed(keysPass.seconds, keysPass.cpu, keysPass.value), keys: keysPass.value },
    total: timed(seconds, cpu, rows),
  };
}

/** The old path: the flat copy's oldest partition-wide range deleted in batches from a cursor (pruneInBatches' walk). */
async function deleteRetention(pool: pg.Pool, meter: Meter, batchSize: number): Promise<DeleteRetention> {
  const first = (await pool.query<{ t: Date | null }>(`SELECT min(received_at) AS t FROM ${FLAT}`)).rows[0]!
    .t;
  if (first === null) throw new Error(`${FLAT} has no range left to delete`);
  // The flat copy's rows start each partition-wide range exactly at its start (fillFlat).
  const cutoff = new Date(first.getTime() + SPAN);
  const run = await meter.run(async () => {
    let cursor = '-infinity';
    let rows = 0;
    let batches = 0;
    for (;;) {
      const row = (
        await pool.query<{ deleted: number; last: string | null }>(OLD_PRUNE_BATCH, [
          cursor,
          cutoff,
          batchSize,
        ])
      ).rows[0]!;
      rows += row.deleted;
      batches += 1;
      if (row.deleted < batchSize || row.last === null) return { rows, batches };
      cursor = row.last;
    }
  });
  return { ...timed(run.seconds, run.cpu, run.value.rows), rows: run.value.rows, batches: run.value.batches };
}

/** The baseline table: the pre-0021 inbox (columns, non-unique indexes, primary key), no triggers. */
async function buildFlat(
  db: pg.Client,
  rows: number,
  rowsPerPartition: number,
  firstDay: Date,
): Promise<number> {
  const started = performance.now();
  await db.query(
    `CREATE TABLE ${FLAT} (LIKE hookgate.inbox INCLUDING DEFAULTS INCLUDING CONSTRAINTS INCLUDING INDEXES)`,
  );
  await db.query(`ALTER TABLE ${FLAT} ADD PRIMARY KEY (endpoint, event_id)`);
  await db.query(
    `CREATE UNIQUE INDEX bench_inbox_flat_body_digest_key ON ${FLAT} (endpoint, body_digest) WHERE body_digest IS NOT NULL`,
  );
  const fill = FILL.replace('INSERT INTO hookgate.inbox', `INSERT INTO ${FLAT}`);
  for (let part = 0; part * rowsPerPartition < rows; part += 1) {
    const from = new Date(firstDay.getTime() + part * SPAN);
    await db.query(fill, [
      rowsPerPartition,
      1_000_000_000_000 + part * rowsPerPartition,
      from,
      INBOX_PARTITION_DAYS,
    ]);
  }
  await db.query(`VACUUM (ANALYZE) ${FLAT}`);
  return (performance.now() - started) / 1000;
}

function claimOf(eventId: string): Claim {
  return {
    endpoint: ENDPOINT,
    provider: 'standard-webhooks',
    event: {
      eventId,
      eventType: 'invoice.paid',
      entityType: null,
      entityId: null,
      entityVersion: null,
      headers: { 'webhook-id': eventId },
    },
    body: JSON.stringify({ type: 'invoice.paid', data: { id: eventId, amount_due: 1200 } }),
    traceparent: null,
  };
}

const percentile = (sorted: readonly number[], p: number): number =>
  sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p))] ?? Number.NaN;

/**
 * A fixed-rate claim load for `seconds` (longer if the retention is still running: the window
 * ends when both are done, at most four windows long). Claims are scheduled every 1/rate
 * seconds across the connections; each one's latency counts from its scheduled start.
 */
async function loadWindow(
  url: string,
  settings: PartitionsSettings,
  label: LoadWindow['label'],
  retention: (() => Promise<unknown>) | null,
): Promise<LoadWindow> {
  const clients = await Promise.all(
    Array.from({ length: settings.connections }, async () => {
      const client = new pg.Client({ connectionString: url, application_name: 'bench-partitions-claim' });
      await client.connect();
      return client;
    }),
  );
  const sent: string[] = [];
  const samples: { at: number; ms: number }[] = [];
  let errors = 0;
  let retentionFrom = Number.NaN;
  let retentionTo = Number.NaN;
  let retentionDone = retention === null;
  const interval = 1000 / settings.rate;
  const started = performance.now();
  const minEnd = started + settings.seconds * 1000;
  const maxEnd = started + settings.seconds * 4000;
  let next = 0;
  const retentionRun = retention
    ? (async () => {
        // A second of load first, so the retention starts on a warm, steady claim stream.
        await new Promise((resolve) => setTimeout(resolve, 1000));
        retentionFrom = performance.now();
        try {
          await retention();
        } finally {
          retentionTo = performance.now();
          retentionDone = true;
        }
      })()
    : Promise.resolve();
  await Promise.all(
    clients.map(async (client) => {
      for (;;) {
        const scheduled = started + next * interval;
        if (scheduled >= maxEnd || (scheduled >= minEnd && retentionDone)) return;
        next += 1;
        const wait = scheduled - performance.now();
        if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait));
        const again = sent.length > 100 && Math.random() < DUPLICATE_SHARE;
        const id = again ? sent[Math.floor(Math.random() * sent.length)]! : `evt_${randomUUID()}`;
        if (!again) sent.push(id);
        try {
          await client.query({
            name: CLAIM_STATEMENT_NAME,
            text: CLAIM_IN_ONE_STATEMENT,
            values: [claimDocument([claimOf(id)]), 1, true],
          });
          samples.push({ at: scheduled, ms: performance.now() - scheduled });
        } catch {
          errors += 1;
        }
      }
    }),
  );
  await retentionRun;
  const seconds = (performance.now() - started) / 1000;
  await Promise.all(clients.map((client) => client.end()));
  const all = samples.map((s) => s.ms).sort((a, b) => a - b);
  const during = retention
    ? samples
        .filter((s) => s.at >= retentionFrom && s.at <= retentionTo)
        .map((s) => s.ms)
        .sort((a, b) => a - b)
    : null;
  return {
    label,
    claims: samples.length,
    seconds,
    p50Ms: percentile(all, 0.5),
    p99Ms: percentile(all, 0.99),
    maxMs: all.at(-1) ?? Number.NaN,
    overlap: during
      ? { claims: during.length, p50Ms: percentile(during, 0.5), p99Ms: percentile(during, 0.99) }
      : null,
    retentionSeconds: retention ? (retentionTo - retentionFrom) / 1000 : null,
    errors,
  };
}

export async function partitionsScenario(
  database: BenchDatabase,
  settings: PartitionsSettings,
): Promise<PartitionsReport> {
  const loadAtStart = loadavg()[0]!;
  const db = new pg.Client({ connectionString: database.url, application_name: 'bench-partitions' });
  await db.connect();
  const pool = new pg.Pool({ connectionString: database.url, max: 2, application_name: 'bench-partitions' });
  const boss = createBoss({
    connectionString: database.url,
    max: 2,
    supervise: false,
    applicationName: 'bench-partitions',
  });
  boss.on('error', () => {});
  // Workers listen in production; a notification with nobody listening costs less.
  const listener = new pg.Client({ connectionString: database.url });
  const sizes: PartitionsSize[] = [];
  const skipped: { rows: number; reason: string }[] = [];
  try {
    await boss.start();
    await ensureQueues(boss, [ENDPOINT]);
    await listener.connect();
    listener.on('notification', () => {});
    await listener.query(`LISTEN ${WAKEUP_CHANNEL}`);
    const meter = meterOf(await postmasterPid(db));
    const wanted = [...settings.rows].sort((a, b) => a - b);
    for (const rows of wanted) {
      if (rows % settings.rowsPerPartition !== 0)
        throw new RangeError(`${rows} rows is not whole partitions of ${settings.rowsPerPartition}`);
    }

    // The partitions a fresh install has: the empty converted table (MINVALUE up to its boundary,
    // tomorrow's midnight or the day after's), then partitions ahead. It goes, as retention drops
    // it once its range is past, and the ranges before the boundary are made here instead.
    const first = (
      await db.query<{ to_at: Date }>(
        `SELECT to_at FROM hookgate.inbox_partitions WHERE name = 'inbox_unpartitioned'`,
      )
    ).rows[0];
    if (!first) throw new Error("expected the fresh install's hookgate.inbox_unpartitioned partition");
    await db.query(`SELECT * FROM hookgate.inbox_drop_partition('inbox_unpartitioned', $1, 0)`, [
      first.to_at,
    ]);
    const today = (await db.query<{ t: Date }>(`SELECT date_trunc('day', now(), 'UTC') AS t`)).rows[0]!.t;
    // Today up to the boundary: empty, where the claim load writes.
    await createPartition(db, today, first.to_at);

    const partCount = (rows: number) => rows / settings.rowsPerPartition;
    // Each size deletes two partitions' worth (quiet, then under load): never fewer than that.
    const flatRows = Math.max(wanted[0]!, 2 * wanted.length * settings.rowsPerPartition);
    // The flat copy: the smallest size's rows, in ranges as wide as a partition, as many rows each.
    const flatFirstDay = new Date(today.getTime() - partCount(flatRows) * SPAN);
    const flatSeconds = await buildFlat(db, flatRows, settings.rowsPerPartition, flatFirstDay);
    const flatBytes = (await bytesOf(db)).flat;
    progress(`flat copy of ${flatRows} rows built in ${flatSeconds.toFixed(0)} s`);

    let filled = 0;
    let bytesPerRow = Number.NaN;
    let secondsPerPartition = Number.NaN;
    for (const rows of wanted) {
      const parts = partCount(rows);
      const used = await bytesOf(db);
      const needed = (parts - filled) * settings.rowsPerPartition * bytesPerRow;
      if (used.inbox + used.keys + used.flat + needed > settings.maxBytes) {
        skipped.push({
          rows,
          reason: `building it would take the inbox, its keys and the flat copy to about ${((used.inbox + used.keys + used.flat + needed) / 1024 ** 3).toFixed(1)} GB, past BENCH_PARTITION_MAX_GB`,
        });
        continue;
      }
      const projected = (parts - filled) * secondsPerPartition;
      if (projected > settings.maxBuildSeconds) {
        skipped.push({
          rows,
          reason: `building it would take about ${projected.toFixed(0)} s at the rate measured so far, past BENCH_PARTITION_MAX_BUILD_S`,
        });
        continue;
      }
      const added = parts - filled;
      const started = performance.now();
      // Older partitions in front of what is there (retention drops from the oldest end).
      let oldest = await oldestFilled(db);
      for (; filled < parts; filled += 1) {
        oldest = new Date(oldest.getTime() - SPAN);
        await fillPartition(db, oldest, settings.rowsPerPartition);
      }
      await db.query('VACUUM (ANALYZE) hookgate.inbox_keys');
      await db.query('CHECKPOINT');
      const buildSeconds = (performance.now() - started) / 1000;
      secondsPerPartition = buildSeconds / added;
      progress(`${rows} rows built in ${buildSeconds.toFixed(0)} s`);
      const bytes = await bytesOf(db);
      bytesPerRow = (bytes.inbox + bytes.keys) / (filled * settings.rowsPerPartition);

      const retention = await partitionRetention(pool, meter, settings.batchSize);
      filled -= 1;
      const baseline = await deleteRetention(pool, meter, settings.batchSize);
      progress(`${rows} rows: retention measured, claim load next`);
      let load: LoadWindow[] | null = null;
      if (settings.rate > 0) {
        load = [
          await loadWindow(database.url, settings, 'alone', null),
          await loadWindow(database.url, settings, 'partition drop + keys pass', () =>
            partitionRetention(pool, meter, settings.batchSize),
          ),
          await loadWindow(database.url, settings, 'DELETE baseline', () =>
            deleteRetention(pool, meter, settings.batchSize),
          ),
        ];
        filled -= 1;
      }
      sizes.push({
        rows,
        partitions: parts,
        buildSeconds,
        inboxBytes: bytes.inbox,
        keysBytes: bytes.keys,
        retention,
        baseline,
        ratios: {
          seconds: retention.total.seconds / baseline.seconds,
          postgresCpu: retention.total.postgresCpu / baseline.postgresCpu,
        },
        load,
      });
    }
    return {
      scenario: 'partitions',
      settings,
      build: BUILD,
      baselineTable: { rows: flatRows, bytes: flatBytes, buildSeconds: flatSeconds },
      sizes,
      skipped,
      loadAverage: { start: loadAtStart, end: loadavg()[0]! },
    };
  } finally {
    await listener.end().catch(() => {});
    await boss.stop({ graceful: false, close: true });
    await pool.end();
    await db.end();
  }
}

const gb = (bytes: number) => (bytes / 1024 ** 3).toFixed(2);

export function renderPartitions(report: PartitionsReport): string[] {
  const s = report.settings;
  const f = (n: number, digits: number, width: number) => n.toFixed(digits).padStart(width);
  const lines = [
    `partitions: retention of one partition (${s.rowsPerPartition} rows, ${INBOX_PARTITION_DAYS} d wide) of the partitioned inbox at each size, against the pre-0021 DELETE path on an unpartitioned copy (${report.baselineTable.rows} rows, ${gb(report.baselineTable.bytes)} GB), batches of ${s.batchSize}`,
    `  build: ${report.build}`,
    '  inbox rows  parts  build s  inbox GB  keys GB   step               seconds  PG CPU s  PG CPU s/1k events',
  ];
  for (const size of report.sizes) {
    const r = size.retention;
    const step = (label: string, t: Timed, first: boolean) =>
      `  ${(first ? String(size.rows) : '').padStart(10)}  ${(first ? String(size.partitions) : '').padStart(5)}  ${(first ? size.buildSeconds.toFixed(0) : '').padStart(7)}  ${(first ? gb(size.inboxBytes) : '').padStart(8)}  ${(first ? gb(size.keysBytes) : '').padStart(7)}   ${label.padEnd(17)} ${f(t.seconds, 3, 8)}  ${f(t.postgresCpu, 2, 8)}  ${f(t.cpuPer1k, 4, 18)}`;
    lines.push(
      step(`drop ${r.partition.slice(7)}`, r.drop, true),
      step(`rows pass (${r.rowsPass.rows})`, r.rowsPass, false),
      step(`keys pass (${r.keysPass.keys})`, r.keysPass, false),
      step('partitioned total', r.total, false),
      step(`DELETE (${size.baseline.rows})`, size.baseline, false),
      `  ${''.padStart(10)}  partitioned / DELETE: time ${size.ratios.seconds.toFixed(3)}, PG CPU ${size.ratios.postgresCpu.toFixed(3)}; drop alone / DELETE: time ${(r.drop.seconds / size.baseline.seconds).toFixed(4)}`,
    );
  }
  if (report.sizes.length > 1) {
    const [a, b] = [report.sizes[0]!, report.sizes.at(-1)!];
    lines.push(
      `  ${b.rows} rows / ${a.rows} rows (same rows per dropped partition): drop time ${(b.retention.drop.seconds / a.retention.drop.seconds).toFixed(2)}, keys pass time ${(b.retention.keysPass.seconds / a.retention.keysPass.seconds).toFixed(2)}, partitioned total time ${(b.retention.total.seconds / a.retention.total.seconds).toFixed(2)}, PG CPU ${(b.retention.total.postgresCpu / a.retention.total.postgresCpu).toFixed(2)}`,
    );
  }
  for (const skip of report.skipped) lines.push(`  ${skip.rows} rows skipped: ${skip.reason}`);
  for (const size of report.sizes) {
    if (!size.load) continue;
    const alone = size.load[0]!;
    lines.push(
      `  claim load on the ${size.rows - s.rowsPerPartition} row inbox: CLAIM_IN_ONE_STATEMENT, 1 delivery per claim, ${s.rate}/s over ${s.connections} connections, 20% duplicates, latency from each claim's scheduled start`,
    );
    for (const w of size.load) {
      const overlap = w.overlap
        ? `; while it ran (${w.retentionSeconds!.toFixed(1)} s, ${w.overlap.claims} claims): p50 ${w.overlap.p50Ms.toFixed(2)} p99 ${w.overlap.p99Ms.toFixed(2)} ms, p99 / alone ${(w.overlap.p99Ms / alone.p99Ms).toFixed(2)}`
        : '';
      lines.push(
        `    ${w.label.padEnd(27)} ${w.seconds.toFixed(1)} s, ${w.claims} claims, p50 ${w.p50Ms.toFixed(2)} ms, p99 ${w.p99Ms.toFixed(2)} ms (/ alone ${(w.p99Ms / alone.p99Ms).toFixed(2)}), max ${w.maxMs.toFixed(0)} ms, errors ${w.errors}${overlap}`,
      );
    }
  }
  lines.push(
    `  machine: ${availableParallelism()} cores; load average ${report.loadAverage.start.toFixed(1)} at start, ${report.loadAverage.end.toFixed(1)} at end`,
  );
  return lines;
}
