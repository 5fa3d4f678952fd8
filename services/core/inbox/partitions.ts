import type pg from 'pg';
import { HookgateError } from '../errors.ts';
import { SETTLED_SQL } from './status.ts';

// Every statement on the inbox's partitions and on hookgate.inbox_keys (migration 0021,
// docs/storage.md "The partitioned inbox"): the online conversion of an unpartitioned inbox,
// partitions made ahead, retention by dropping a partition, and the keys' own retention. The
// DDL itself runs in the migration's SECURITY DEFINER functions, so the runtime role that calls
// them can make and drop partitions without being able to ALTER or DROP anything else.

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

const IS_PARTITIONED = `
  SELECT c.relkind = 'p' AS partitioned
    FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
   WHERE n.nspname = 'hookgate' AND c.relname = 'inbox'`;

/** Whether hookgate.inbox is the partitioned table (false before the conversion finished). */
export async function inboxIsPartitioned(db: Queryable): Promise<boolean> {
  return (await db.query<{ partitioned: boolean }>(IS_PARTITIONED)).rows[0]?.partitioned === true;
}

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
  /** Null for the table the inbox was before its conversion. */
  readonly from_at: Date | null;
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
 * Rows pruned one by one: settled rows received before both the cutoff and the oldest day
 * partition, that is rows of the table the inbox was before its conversion and of the default
 * partition (rows a missing day partition let in, rows kept from dropped days and settled since).
 * Deleted by key (ctid is not unique across partitions); their keys stay, until the dedupe
 * horizon (pruneInboxKeys). Parameters as pruneInBatches gives them: cursor, cutoff, batch size.
 */
export const PRUNE_INBOX_ROWS_BATCH = `
  WITH bound AS (
    SELECT least($2::timestamptz,
                 (SELECT min(from_at) FROM hookgate.inbox_partitions WHERE from_at IS NOT NULL)) AS before
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
                 (SELECT min(from_at) FROM hookgate.inbox_partitions WHERE from_at IS NOT NULL)),
           (SELECT max(to_at) FROM hookgate.inbox_partitions WHERE to_at <= $1::timestamptz))
     AND status IN (${SETTLED_SQL})`;

/**
 * Keys of rows that are gone, in one stretch of time ($1 cursor, $2 the stretch's end, $3 batch
 * size): a batch of candidates in received_at order, deleted by ctid unless one of the tables a
 * row of that time can be in still holds it. In a stretch no partition covers any more, that is
 * only the default partition (an unsettled row moved out of a dropped week); in the stretch of
 * the table the inbox was before its conversion (pruned row by row), that table too. The
 * candidates' last received_at moves the cursor on, so a kept key is stepped over once, not read
 * again by every batch.
 */
const pruneKeysBatch = (holders: readonly string[]) => `
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
              WHERE ${holders
                .map(
                  (table) =>
                    `NOT EXISTS (SELECT 1 FROM ${table} d WHERE d.endpoint = c.endpoint AND d.event_id = c.event_id)`,
                )
                .join('\n                AND ')}))
    RETURNING 1
  )
  SELECT (SELECT count(*) FROM gone)::int AS deleted, (SELECT count(*) FROM candidates)::int AS seen,
         (SELECT max(received_at) FROM candidates)::text AS last`;

const PRUNE_KEYS_BATCH = pruneKeysBatch(['hookgate.inbox_default']);
const PRUNE_KEYS_BATCH_UNPARTITIONED = pruneKeysBatch([
  'hookgate.inbox_default',
  'hookgate.inbox_unpartitioned',
]);

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
 * Where the keys' retention has reached (migration 0024): it only moves forward, and moves before
 * the keys go, so a run stopped halfway still says they may be gone.
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
  const sorted = [...partitions].sort(
    (a, b) =>
      (a.from_at?.getTime() ?? Number.NEGATIVE_INFINITY) - (b.from_at?.getTime() ?? Number.NEGATIVE_INFINITY),
  );
  const gaps: { from: string; to: Date }[] = [];
  let start: Date | null = null; // null: -infinity
  for (const p of sorted) {
    if (start !== null && start.getTime() >= cutoff.getTime()) break;
    const from = p.from_at;
    if (from !== null && (start === null || from.getTime() > start.getTime())) {
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
  const partitions = await listInboxPartitions(db);
  const stretches = uncoveredBefore(partitions, cutoff).map((gap) => ({ ...gap, sql: PRUNE_KEYS_BATCH }));
  // The table the inbox was covers everything before its end, and loses rows one by one.
  const unpartitioned = partitions.find((partition) => partition.from_at === null);
  if (unpartitioned)
    stretches.push({
      from: '-infinity',
      to: new Date(Math.min(unpartitioned.to_at.getTime(), cutoff.getTime())),
      sql: PRUNE_KEYS_BATCH_UNPARTITIONED,
    });
  let total = 0;
  for (const gap of stretches) {
    let cursor = gap.from;
    for (;;) {
      const row = (
        await db.query<{ deleted: number; seen: number; last: string | null }>(gap.sql, [
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

// ---------------------------------------------------------------------------------------------
// The online conversion (run by `hookgate migrate`, under its advisory lock)

const BACKFILL_FIRST = `
  WITH batch AS (
    SELECT endpoint, event_id, body_digest, received_at FROM hookgate.inbox
     ORDER BY endpoint, event_id LIMIT $1
  ), added AS (
    INSERT INTO hookgate.inbox_keys (endpoint, event_id, body_digest, received_at)
    SELECT endpoint, event_id, body_digest, received_at FROM batch ON CONFLICT DO NOTHING
  )
  SELECT count(*)::int AS n, max(endpoint) AS endpoint,
         (SELECT max(event_id) FROM batch WHERE endpoint = (SELECT max(endpoint) FROM batch)) AS event_id
    FROM batch`;

const BACKFILL_NEXT = `
  WITH batch AS (
    SELECT endpoint, event_id, body_digest, received_at FROM hookgate.inbox
     WHERE (endpoint, event_id) > ($2::text, $3::text)
     ORDER BY endpoint, event_id LIMIT $1
  ), added AS (
    INSERT INTO hookgate.inbox_keys (endpoint, event_id, body_digest, received_at)
    SELECT endpoint, event_id, body_digest, received_at FROM batch ON CONFLICT DO NOTHING
  )
  SELECT count(*)::int AS n, max(endpoint) AS endpoint,
         (SELECT max(event_id) FROM batch WHERE endpoint = (SELECT max(endpoint) FROM batch)) AS event_id
    FROM batch`;

const KEY_INDEX_STATE = `
  SELECT i.indisvalid AS valid
    FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
   WHERE c.relname = 'inbox_key_idx' AND c.relnamespace = 'hookgate'::regnamespace`;

/** Where the day partitions begin: tomorrow (UTC), or the day after when tomorrow is too near. */
const BOUNDARY = `
  SELECT CASE WHEN date_trunc('day', now(), 'UTC') + interval '1 day' - now() > interval '30 minutes'
              THEN date_trunc('day', now(), 'UTC') + interval '1 day'
              ELSE date_trunc('day', now(), 'UTC') + interval '2 days' END AS boundary`;

const BOUNDARY_CONSTRAINT = `
  SELECT pg_get_expr(conbin, conrelid) AS expr, convalidated AS valid,
         (regexp_match(pg_get_expr(conbin, conrelid), '''([^'']+)'''))[1]::timestamptz AS boundary
    FROM pg_constraint
   WHERE conrelid = 'hookgate.inbox'::regclass AND conname = 'inbox_before_partitions'`;

/** Non-unique indexes of the table being converted: the parent gets each, under the same name. */
const INDEXES_TO_CARRY = `
  SELECT c.relname AS name, pg_get_indexdef(i.indexrelid) AS def
    FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
   WHERE i.indrelid = 'hookgate.inbox'::regclass AND NOT i.indisunique
   ORDER BY c.relname`;

/**
 * The grants on the table being converted, given again on its partitioned parent in the switch's
 * transaction: the gateways still running go on claiming through hookgate.inbox as
 * hookgate_runtime (and the console, column by column), and migrate's own grants (roles.ts) only
 * come at the end of its run, after the partitions ahead and pg-boss's schema. Without these,
 * every claim between the switch and then would be refused.
 */
const CARRY_GRANTS = `
  DO $$
  DECLARE
    g record;
  BEGIN
    FOR g IN
      SELECT NULL::name AS col, a.privilege_type, a.grantee, a.is_grantable
        FROM pg_class c, aclexplode(c.relacl) a
       WHERE c.oid = 'hookgate.inbox_unpartitioned'::regclass AND a.grantee <> c.relowner
      UNION ALL
      SELECT t.attname, a.privilege_type, a.grantee, a.is_grantable
        FROM pg_attribute t, aclexplode(t.attacl) a
       WHERE t.attrelid = 'hookgate.inbox_unpartitioned'::regclass AND t.attnum > 0 AND NOT t.attisdropped
    LOOP
      EXECUTE format('GRANT %s%s ON hookgate.inbox TO %s%s', g.privilege_type,
                     CASE WHEN g.col IS NOT NULL THEN format(' (%I)', g.col) ELSE '' END,
                     CASE WHEN g.grantee = 0 THEN 'PUBLIC' ELSE g.grantee::regrole::text END,
                     CASE WHEN g.is_grantable THEN ' WITH GRANT OPTION' ELSE '' END);
    END LOOP;
  END $$`;

export interface ConversionOptions {
  /** Keys copied per statement while the inbox is still one table. */
  readonly batchSize?: number;
  /** Called after each step, for the migrate command's output. */
  readonly onStep?: (step: string) => void;
  /** How many times the final switch retries its lock before giving up (it waits 2 s each). */
  readonly switchAttempts?: number;
}

/**
 * Converts hookgate.inbox into the partitioned inbox, online: every step either holds no lock
 * that stops claims, or holds it for one short transaction with a lock_timeout (retried). Safe to
 * run again after it was interrupted at any point: each step finds what an earlier run did.
 * Runs on the migration's own connection (a session of its own: CREATE INDEX CONCURRENTLY and
 * VALIDATE cannot run inside a transaction block).
 */
export async function convertInboxOnline(
  client: pg.Client,
  options: ConversionOptions = {},
): Promise<boolean> {
  if (await inboxIsPartitioned(client)) return false;
  const step = options.onStep ?? (() => {});
  const batch = options.batchSize ?? 10_000;

  // 1. Keys of rows already there (new rows get theirs from the mirror trigger).
  let copied = 0;
  let last: { endpoint: string; event_id: string } | null = null;
  for (;;) {
    const row: { n: number; endpoint: string | null; event_id: string | null } = (
      last === null
        ? await client.query(BACKFILL_FIRST, [batch])
        : await client.query(BACKFILL_NEXT, [batch, last.endpoint, last.event_id])
    ).rows[0];
    copied += row.n;
    if (row.n < batch || row.endpoint === null || row.event_id === null) break;
    last = { endpoint: row.endpoint, event_id: row.event_id };
  }
  step(`inbox keys recorded (${copied} rows read)`);

  // 2. The by-key index every partition carries (the primary key cannot be the parent's).
  const keyIndex = (await client.query<{ valid: boolean }>(KEY_INDEX_STATE)).rows[0];
  if (keyIndex && !keyIndex.valid) await client.query('DROP INDEX CONCURRENTLY hookgate.inbox_key_idx');
  if (!keyIndex?.valid) {
    await client.query('CREATE INDEX CONCURRENTLY inbox_key_idx ON hookgate.inbox (endpoint, event_id)');
  }
  step('inbox by-key index built');

  // 3. A validated bound on received_at proves the table fits its partition's range, so the
  //    attach reads nothing. Rows keep arriving with now(): the bound is midnight ahead.
  const attempts = options.switchAttempts ?? 30;
  for (let attempt = 1; ; attempt += 1) {
    try {
      // Adding the bound takes the same lock as the switch, for as long: waited for as often.
      await switchToPartitioned(client, await readyBoundary(client));
      break;
    } catch (error) {
      const code = (error as { code?: string }).code;
      if (code !== LOCK_NOT_AVAILABLE && code !== 'P0001') throw error;
      if (attempt >= attempts) {
        throw new HookgateError(
          'inbox_conversion_blocked',
          `The inbox could not be switched to its partitioned form: ${attempts} attempts each waited 2 seconds for its lock behind other sessions. Run hookgate migrate again when long transactions on hookgate.inbox have ended.`,
          { cause: error },
        );
      }
      step(`inbox switch waited for its lock (attempt ${attempt}); retrying`);
    }
  }
  step('inbox partitioned');
  const made = await ensureInboxPartitions(client);
  step(`inbox partitions made ahead (${made})`);
  return true;
}

async function readyBoundary(client: pg.Client): Promise<Date> {
  const wanted = (await client.query<{ boundary: Date }>(BOUNDARY)).rows[0]!.boundary;
  const existing = (await client.query<{ valid: boolean; boundary: Date | null }>(BOUNDARY_CONSTRAINT))
    .rows[0];
  if (existing && existing.boundary !== null && existing.boundary.getTime() === wanted.getTime()) {
    if (!existing.valid)
      await client.query('ALTER TABLE hookgate.inbox VALIDATE CONSTRAINT inbox_before_partitions');
    return wanted;
  }
  await client.query('SET lock_timeout = 2000');
  try {
    if (existing) await client.query('ALTER TABLE hookgate.inbox DROP CONSTRAINT inbox_before_partitions');
    // The value comes from the database's own clock (BOUNDARY), never from input.
    await client.query(
      `ALTER TABLE hookgate.inbox ADD CONSTRAINT inbox_before_partitions CHECK (received_at < '${wanted.toISOString()}'::timestamptz) NOT VALID`,
    );
  } finally {
    await client.query('RESET lock_timeout');
  }
  // Reads the table without stopping writes (SHARE UPDATE EXCLUSIVE).
  await client.query('ALTER TABLE hookgate.inbox VALIDATE CONSTRAINT inbox_before_partitions');
  return wanted;
}

async function switchToPartitioned(client: pg.Client, boundary: Date): Promise<void> {
  const indexes = (await client.query<{ name: string; def: string }>(INDEXES_TO_CARRY)).rows;
  const bound = `'${boundary.toISOString()}'::timestamptz`;
  // One round trip: claims wait behind this transaction's lock, so it must not also wait on the
  // network between its statements (on a loaded 2-core VM, 20 round trips held claims > 0.5 s).
  const statements = [
    'BEGIN',
    "SET LOCAL lock_timeout = '2s'",
    'LOCK TABLE hookgate.inbox IN ACCESS EXCLUSIVE MODE',
    // The bound must still be ahead of every row a claim can write from now on.
    `DO $$ BEGIN
       IF now() >= ${bound} - interval '1 minute' THEN RAISE EXCEPTION 'boundary passed'; END IF;
     END $$`,
    'ALTER TABLE hookgate.inbox RENAME TO inbox_unpartitioned',
    ...indexes.map(
      (index) =>
        `ALTER INDEX hookgate.${quoteIdent(index.name)} RENAME TO ${quoteIdent(carriedName(index.name))}`,
    ),
    `CREATE TABLE hookgate.inbox (LIKE hookgate.inbox_unpartitioned
       INCLUDING DEFAULTS INCLUDING CONSTRAINTS INCLUDING STORAGE INCLUDING COMPRESSION)
     PARTITION BY RANGE (received_at)`,
    'ALTER TABLE hookgate.inbox DROP CONSTRAINT inbox_before_partitions',
    CARRY_GRANTS,
    `ALTER TABLE hookgate.inbox ATTACH PARTITION hookgate.inbox_unpartitioned FOR VALUES FROM (MINVALUE) TO (${bound})`,
    'CREATE TABLE hookgate.inbox_default PARTITION OF hookgate.inbox DEFAULT',
    // Each matches the renamed index of the first partition, which the parent adopts as it is.
    ...indexes.map(
      (index) =>
        `CREATE INDEX ${quoteIdent(index.name)} ON hookgate.inbox${index.def.slice(index.def.indexOf(' USING '))}`,
    ),
    `INSERT INTO hookgate.inbox_partitions (name, from_at, to_at) VALUES ('inbox_unpartitioned', NULL, ${bound})`,
    'DROP TRIGGER inbox_mirror_key ON hookgate.inbox_unpartitioned',
    'CREATE TRIGGER inbox_claim_key BEFORE INSERT ON hookgate.inbox FOR EACH ROW EXECUTE FUNCTION hookgate.inbox_claim_key()',
    'CREATE TRIGGER inbox_forget_key BEFORE DELETE ON hookgate.inbox FOR EACH ROW EXECUTE FUNCTION hookgate.inbox_forget_key()',
    'CREATE TRIGGER inbox_truncate_keys AFTER TRUNCATE ON hookgate.inbox FOR EACH STATEMENT EXECUTE FUNCTION hookgate.inbox_truncate_keys()',
    // Fires only for UPDATEs that name these columns: never the apply's or the claim's.
    'CREATE TRIGGER inbox_move_key BEFORE UPDATE OF endpoint, event_id, received_at ON hookgate.inbox FOR EACH ROW EXECUTE FUNCTION hookgate.inbox_move_key()',
    'COMMIT',
  ];
  try {
    await client.query(statements.join(';\n'));
  } catch (error) {
    await client.query('ROLLBACK');
    throw error;
  }
}

function carriedName(name: string): string {
  return `inbox_unpartitioned_${name.replace(/^inbox_/, '')}`.slice(0, 63);
}

function quoteIdent(name: string): string {
  return `"${name.replaceAll('"', '""')}"`;
}
