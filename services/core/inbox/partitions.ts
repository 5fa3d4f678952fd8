import type pg from 'pg';
import { SETTLED_SQL } from './status.ts';

// Every statement on the inbox's partitions and on hookgate.inbox_keys (docs/storage.md, "The
// partitioned inbox"): partitions made ahead, retention by dropping a partition, and the keys' own
// retention. The DDL itself runs in the baseline migration's SECURITY DEFINER functions, so the
// runtime role that calls them can make and drop partitions without being able to ALTER or DROP
// anything else.

type Queryable = Pick<pg.Pool | pg.PoolClient | pg.Client, 'query'>;

/**
 * Each partition's width in days. A week, not a day: statements that look rows up by key (the
 * apply's lock and settle, the relay's payload) cannot be pruned to one partition at plan time,
 * so each plans and probes every partition, and with a 30-day window a day's width made ~40 of
 * them (measured: planning alone 12–20 ms per 100-row apply lock at 42 partitions on the 2-core VM,
 * against ~1 ms at 9). A week keeps 5–7, at the cost of a coarser retention: a settled row lives
 * until its week is past the window, up to 7 days longer than `--older-than`.
 */
export const INBOX_PARTITION_DAYS = 7;
/** How far ahead partitions exist, so a week never starts without one. */
export const INBOX_PARTITIONS_AHEAD_DAYS = 14;
/**
 * A partition past retention holding more unsettled (pending, parked, dead, discarded) rows than
 * this is not dropped: moving them out would hold the inbox's lock too long. Prune says so.
 */
export const INBOX_MAX_MOVED_ROWS = 10_000;

const CREATE_AHEAD = `
  SELECT hookgate.inbox_create_partitions(now() + make_interval(days => $1::int), $2::int) AS made`;

/** Makes the partitions missing until `aheadDays` from now; returns how many it made. */
export async function ensureInboxPartitions(
  db: Queryable,
  aheadDays: number = INBOX_PARTITIONS_AHEAD_DAYS,
): Promise<number> {
  return (await db.query<{ made: number }>(CREATE_AHEAD, [aheadDays, INBOX_PARTITION_DAYS])).rows[0]!.made;
}

const PARTITIONS = `
  SELECT name, from_at, to_at FROM hookgate.inbox_partitions ORDER BY to_at`;

export interface InboxPartition {
  readonly name: string;
  readonly from_at: Date;
  readonly to_at: Date;
}

export async function listInboxPartitions(db: Queryable): Promise<InboxPartition[]> {
  return (await db.query<InboxPartition>(PARTITIONS)).rows;
}

const COVERAGE = `
  SELECT EXTRACT(EPOCH FROM coalesce(max(to_at), now()) - now())::float8 AS ahead_seconds,
         (SELECT count(*) FROM hookgate.inbox_partitions)::int AS partitions
    FROM hookgate.inbox_partitions`;

export interface PartitionCoverage {
  /** Seconds from now until the last partition ends (0 or less: new rows go to the default one). */
  readonly ahead_seconds: number;
  readonly partitions: number;
}

/** For the gauges: how far ahead the partitions reach, and how many there are. */
export async function partitionCoverage(db: Queryable): Promise<PartitionCoverage> {
  return (await db.query<PartitionCoverage>(COVERAGE)).rows[0]!;
}

// Counted up to a bound: after a lapse the default partition can hold days of rows, and a gauge
// must not scan them every minute.
const DEFAULT_ROWS = `SELECT count(*)::int AS rows FROM (SELECT 1 FROM hookgate.inbox_default LIMIT 1000000) d`;

/** Rows in the default partition (up to 1 000 000): unsettled rows of dropped days, rows of days with no partition. */
export async function defaultPartitionRows(db: Queryable): Promise<number> {
  return (await db.query<{ rows: number }>(DEFAULT_ROWS)).rows[0]!.rows;
}

// ---------------------------------------------------------------------------------------------
// Retention

const DROP_PARTITION = `SELECT moved, kept, dropped FROM hookgate.inbox_drop_partition($1, $2, $3)`;

const LOCK_NOT_AVAILABLE = '55P03';

export interface PartitionDrop {
  readonly name: string;
  /** Rows kept by moving them to the default partition (null when the partition was left). */
  readonly moved: number | null;
  /** Settled rows that went with the partition (0 when it was left). */
  readonly rows: number;
  /** Why a partition past retention is still there: its unsettled rows (at least), or a lock wait. */
  readonly left?: 'unsettled_rows' | 'lock_timeout';
  readonly kept?: number;
}

/**
 * Drops every partition whose range ends at or before the cutoff, oldest first, one short
 * transaction each. A partition that could not take the inbox's lock within the function's
 * lock_timeout is left for the next run, as is one with too many unsettled rows.
 */
export async function dropExpiredPartitions(db: pg.Pool, cutoff: Date): Promise<PartitionDrop[]> {
  const drops: PartitionDrop[] = [];
  for (const partition of await listInboxPartitions(db)) {
    if (partition.to_at.getTime() > cutoff.getTime()) break;
    try {
      const row = (
        await db.query<{ moved: string | null; kept: string; dropped: string | null }>(DROP_PARTITION, [
          partition.name,
          cutoff,
          INBOX_MAX_MOVED_ROWS,
        ])
      ).rows[0]!;
      drops.push(
        row.moved === null
          ? { name: partition.name, moved: null, rows: 0, left: 'unsettled_rows', kept: Number(row.kept) }
          : { name: partition.name, moved: Number(row.moved), rows: Number(row.dropped ?? 0) },
      );
    } catch (error) {
      if ((error as { code?: string }).code !== LOCK_NOT_AVAILABLE) throw error;
      drops.push({ name: partition.name, moved: null, rows: 0, left: 'lock_timeout' });
    }
  }
  return drops;
}

/**
 * Rows pruned one by one: settled rows received before both the cutoff and the oldest dated
 * partition, that is rows of the default partition (rows a missing partition let in, rows kept
 * from dropped weeks and settled since). Deleted by key (ctid is not unique across partitions);
 * their keys stay, until the dedupe horizon (pruneInboxKeys). Parameters as pruneInBatches gives
 * them: cursor, cutoff, batch size.
 */
export const PRUNE_INBOX_ROWS_BATCH = `
  WITH bound AS (
    SELECT least($2::timestamptz,
                 (SELECT min(from_at) FROM hookgate.inbox_partitions)) AS before
  ), picked AS (
    SELECT i.endpoint, i.event_id, i.received_at
      FROM hookgate.inbox i, bound b
     WHERE i.received_at >= $1::timestamptz AND i.received_at < b.before
       AND i.status IN (${SETTLED_SQL})
     ORDER BY i.received_at
     LIMIT $3
  ), gone AS (
    DELETE FROM hookgate.inbox i
     USING picked p
     WHERE i.endpoint = p.endpoint AND i.event_id = p.event_id AND i.received_at = p.received_at
       -- A row changed since the batch read it (a replay) is re-checked here, not deleted blindly.
       AND i.status IN (${SETTLED_SQL})
    RETURNING i.received_at
  )
  SELECT count(*)::int AS deleted, max(received_at)::text AS last FROM gone`;

/** What a dry run would remove: settled rows before the cutoff (dropped partitions' included). */
export const COUNT_PRUNABLE_INBOX_ROWS = `
  SELECT count(*)::int AS rows
    FROM hookgate.inbox
   WHERE received_at < greatest(
           least($1::timestamptz,
                 (SELECT min(from_at) FROM hookgate.inbox_partitions)),
           (SELECT max(to_at) FROM hookgate.inbox_partitions WHERE to_at <= $1::timestamptz))
     AND status IN (${SETTLED_SQL})`;

/**
 * Keys of rows that are gone, in one stretch of time no partition covers any more ($1 cursor, $2
 * the stretch's end, $3 batch size): a batch of candidates in received_at order, deleted by ctid
 * unless the default partition holds their row (an unsettled row moved out of a dropped week;
 * nowhere else can a row of that time be). The candidates' last received_at moves the cursor on,
 * so a kept key is stepped over once, not read again by every batch.
 */
const PRUNE_KEYS_BATCH = `
  WITH candidates AS MATERIALIZED (
    SELECT k.ctid AS tid, k.endpoint, k.event_id, k.received_at
      FROM hookgate.inbox_keys k
     WHERE k.received_at >= $1::timestamptz AND k.received_at < $2::timestamptz
     ORDER BY k.received_at
     LIMIT $3
  ), gone AS (
    DELETE FROM hookgate.inbox_keys
     WHERE ctid = ANY (ARRAY(
             SELECT c.tid FROM candidates c
              WHERE NOT EXISTS (SELECT 1 FROM hookgate.inbox_default d
                                 WHERE d.endpoint = c.endpoint AND d.event_id = c.event_id)))
    RETURNING 1
  )
  SELECT (SELECT count(*) FROM gone)::int AS deleted, (SELECT count(*) FROM candidates)::int AS seen,
         (SELECT max(received_at) FROM candidates)::text AS last`;

export interface KeysPruneOptions {
  /** The caller's clock: keys of events received more than `horizonMs` before it may go. */
  readonly now: Date;
  /** `dedupe.horizon`: how long a key outlives its row. */
  readonly horizonMs: number;
  readonly batchSize: number;
  readonly pauseMs?: number;
  readonly signal?: AbortSignal;
}

/**
 * Where the keys' retention has reached (hookgate.inbox_keys_floor): it only moves forward, and
 * moves before the keys go, so a run stopped halfway still says they may be gone.
 */
const RAISE_KEYS_FLOOR = `
  INSERT INTO hookgate.inbox_keys_floor AS f (pruned_before) VALUES ($1::timestamptz)
  ON CONFLICT (singleton) DO UPDATE SET pruned_before = greatest(f.pruned_before, EXCLUDED.pruned_before)`;

const KEYS_FLOOR = `SELECT pruned_before FROM hookgate.inbox_keys_floor`;

/**
 * Before when keys may be gone: the furthest the keys' retention has reached (null: it never ran,
 * and no row was pruned with its key before the horizon existed).
 */
export async function keysPrunedBefore(db: Queryable): Promise<Date | null> {
  return (await db.query<{ pruned_before: Date }>(KEYS_FLOOR)).rows[0]?.pruned_before ?? null;
}

/**
 * The stretches of time before the cutoff that no partition covers any more: where the keys of
 * dropped weeks are. A partition left in place (too many unsettled rows) keeps its own stretch,
 * not every stretch after it.
 */
export function uncoveredBefore(
  partitions: readonly Pick<InboxPartition, 'from_at' | 'to_at'>[],
  cutoff: Date,
): { from: string; to: Date }[] {
  const sorted = [...partitions].sort((a, b) => a.from_at.getTime() - b.from_at.getTime());
  const gaps: { from: string; to: Date }[] = [];
  let start: Date | null = null; // null: -infinity
  for (const p of sorted) {
    if (start !== null && start.getTime() >= cutoff.getTime()) break;
    const from = p.from_at;
    if (start === null || from.getTime() > start.getTime()) {
      const to = from.getTime() < cutoff.getTime() ? from : cutoff;
      gaps.push({ from: start === null ? '-infinity' : start.toISOString(), to });
    }
    if (start === null || p.to_at.getTime() > start.getTime()) start = p.to_at;
  }
  if (start === null || start.getTime() < cutoff.getTime())
    gaps.push({ from: start === null ? '-infinity' : start.toISOString(), to: cutoff });
  return gaps.filter((g) => g.from === '-infinity' || new Date(g.from).getTime() < g.to.getTime());
}

/**
 * The keys' own retention: deletes the keys of rows that are gone, of events received more than
 * the horizon before `now` (a row still in the inbox keeps its key, whatever its age); returns
 * how many it deleted.
 */
export async function pruneInboxKeys(db: pg.Pool, options: KeysPruneOptions): Promise<number> {
  const cutoff = new Date(options.now.getTime() - options.horizonMs);
  await db.query(RAISE_KEYS_FLOOR, [cutoff]);
  let total = 0;
  for (const gap of uncoveredBefore(await listInboxPartitions(db), cutoff)) {
    let cursor = gap.from;
    for (;;) {
      const row = (
        await db.query<{ deleted: number; seen: number; last: string | null }>(PRUNE_KEYS_BATCH, [
          cursor,
          gap.to,
          options.batchSize,
        ])
      ).rows[0]!;
      total += row.deleted;
      if (options.signal?.aborted) return total;
      if (row.seen < options.batchSize || row.last === null) break;
      // Keys sharing the last timestamp are read again by the next batch (`>=`); those deleted
      // are dead, the kept ones few (one timestamp's).
      if (row.last === cursor && row.deleted === 0) break;
      cursor = row.last;
      if (options.pauseMs) await new Promise((resolve) => setTimeout(resolve, options.pauseMs));
    }
  }
  return total;
}
