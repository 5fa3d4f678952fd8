// What each table holds on disk: heap, TOAST, each index, and the live and dead tuples
// autovacuum sees. Leaf tables only: a partitioned parent (pg-boss's job table) has no storage of
// its own, its partitions do.
import type pg from 'pg';

export interface TableSize {
  /** schema.table */
  readonly table: string;
  /** Heap, main fork. */
  readonly heap: number;
  readonly toast: number;
  readonly indexes: number;
  /** heap + toast + indexes + free space and visibility maps. */
  readonly total: number;
  readonly byIndex: Readonly<Record<string, number>>;
  readonly liveTuples: number;
  readonly deadTuples: number;
  readonly autovacuumCount: number;
}

const TABLE_SIZES = `
  SELECT n.nspname || '.' || c.relname AS table,
         pg_relation_size(c.oid)::float8 AS heap,
         coalesce(pg_total_relation_size(nullif(c.reltoastrelid, 0)), 0)::float8 AS toast,
         pg_indexes_size(c.oid)::float8 AS indexes,
         pg_total_relation_size(c.oid)::float8 AS total,
         coalesce(s.n_live_tup, 0)::float8 AS live_tuples,
         coalesce(s.n_dead_tup, 0)::float8 AS dead_tuples,
         coalesce(s.autovacuum_count, 0)::float8 AS autovacuum_count,
         coalesce((SELECT jsonb_object_agg(ic.relname, pg_relation_size(ic.oid))
                     FROM pg_index x JOIN pg_class ic ON ic.oid = x.indexrelid
                    WHERE x.indrelid = c.oid), '{}'::jsonb) AS by_index
    FROM pg_class c
    JOIN pg_namespace n ON n.oid = c.relnamespace
    LEFT JOIN pg_stat_user_tables s ON s.relid = c.oid
   WHERE c.relkind = 'r' AND n.nspname = ANY($1::text[])
   ORDER BY 1`;

export async function tableSizes(
  db: pg.Pool | pg.Client,
  schemas: readonly string[] = ['hookgate', 'pgboss', 'billing'],
): Promise<TableSize[]> {
  const { rows } = await db.query<{
    table: string;
    heap: number;
    toast: number;
    indexes: number;
    total: number;
    live_tuples: number;
    dead_tuples: number;
    autovacuum_count: number;
    by_index: Record<string, number>;
  }>(TABLE_SIZES, [schemas]);
  return rows.map((r) => ({
    table: r.table,
    heap: r.heap,
    toast: r.toast,
    indexes: r.indexes,
    total: r.total,
    byIndex: r.by_index,
    liveTuples: r.live_tuples,
    deadTuples: r.dead_tuples,
    autovacuumCount: r.autovacuum_count,
  }));
}

/** The tables that hold something (pg-boss creates many small bookkeeping tables). */
export function nonEmpty(sizes: readonly TableSize[], minBytes = 256 * 1024): TableSize[] {
  return sizes.filter((s) => s.total >= minBytes);
}
