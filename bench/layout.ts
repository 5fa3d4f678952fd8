// The layout scenario: what the inbox's storage choices do to its bytes per event, each measured
// on the same rows. Copies of an inbox partition (its columns and every index, as the migrations
// leave them) with one storage choice changed are filled the way the claim and the settle fill
// the inbox: rows inserted pending, then each updated once to processed (the settle, which changes
// `status`, a column the partial indexes name, so it is never a HOT update). Two orders:
//
// - steady: in rounds of `round` rows, each inserted, settled and then vacuumed (autovacuum keeping
//   up), so each round's inserts reuse the space of the previous round's old row versions;
// - burst: every row inserted, then every row settled, then one VACUUM (what the bytes scenario
//   measures after its run).
//
// Bytes per row of the heap, TOAST and each index, after a final VACUUM.
import { availableParallelism } from 'node:os';
import pg from 'pg';
import type { BenchDatabase } from './processes.ts';

export interface LayoutSettings {
  readonly rows: number;
  readonly round: number;
}

interface Variant {
  readonly name: string;
  /** Statements run on the copy before it is filled ({t}: its name). */
  readonly setup: readonly string[];
}

const VARIANTS: readonly Variant[] = [
  { name: 'as migrated (fillfactor 100, payload inline)', setup: [] },
  { name: 'fillfactor 90', setup: ['ALTER TABLE {t} SET (fillfactor = 90)'] },
  { name: 'fillfactor 70', setup: ['ALTER TABLE {t} SET (fillfactor = 70)'] },
  {
    name: 'payload out of line, uncompressed (toast_tuple_target 128, EXTERNAL)',
    setup: [
      'ALTER TABLE {t} SET (toast_tuple_target = 128)',
      'ALTER TABLE {t} ALTER COLUMN payload SET STORAGE EXTERNAL',
    ],
  },
  {
    name: 'payload compressed and out of line (toast_tuple_target 128, EXTENDED)',
    setup: ['ALTER TABLE {t} SET (toast_tuple_target = 128)'],
  },
];

/** A Stripe `invoice.paid`-like payload of about 460 bytes as jsonb, varied per row. */
const PAYLOAD = `jsonb_build_object(
  'id', 'evt_' || md5(n::text || 'e'), 'object', 'event', 'api_version', '2024-06-20', 'created', 1733000000 + n,
  'livemode', false, 'pending_webhooks', 1, 'type', 'invoice.paid',
  'request', jsonb_build_object('id', 'req_' || left(md5(n::text || 'r'), 14), 'idempotency_key', NULL),
  'data', jsonb_build_object('object', jsonb_build_object(
    'id', 'in_' || left(md5(n::text || 'i'), 24), 'object', 'invoice', 'customer', 'cus_' || left(md5((n % 5000)::text), 14),
    'subscription', 'sub_' || left(md5((n % 5000)::text || 's'), 24), 'amount_paid', 1000 + n % 9000,
    'currency', 'usd', 'status', 'paid', 'period_end', 1733000000 + n)))`;

const INSERT = `
  INSERT INTO {t} (endpoint, event_id, provider, event_type, entity_type, entity_id, entity_version, payload,
                   headers, received_at, dispatch_job)
  SELECT 'billing', 'evt_' || md5(n::text || 'e'), 'stripe', 'invoice.paid', 'invoice', 'in_' || left(md5(n::text || 'i'), 24),
         1733000000 + n, ${PAYLOAD}, '{}'::jsonb, $3::timestamptz + n * interval '1 millisecond', gen_random_uuid()
    FROM generate_series($1::int, $2::int) AS n`;

/** The settle, in batches of 100 as a worker's claim batches: status, attempts, processed_at. */
const SETTLE = `
  UPDATE {t} SET status = 'processed', attempts = 1, processed_at = received_at + interval '40 milliseconds'
   WHERE status = 'pending' AND received_at >= $1::timestamptz + $2::int * interval '1 millisecond'
     AND received_at < $1::timestamptz + ($2::int + 100) * interval '1 millisecond'`;

export interface LayoutResult {
  readonly variant: string;
  readonly order: 'steady' | 'burst';
  readonly heap: number;
  readonly toast: number;
  readonly indexes: Readonly<Record<string, number>>;
  readonly total: number;
  readonly payload: number;
}

export interface LayoutReport {
  readonly scenario: 'layout';
  readonly settings: LayoutSettings;
  readonly results: readonly LayoutResult[];
}

async function measure(db: pg.Client, table: string, rows: number) {
  const { rows: sizes } = await db.query<{
    heap: number;
    toast: number;
    total: number;
    indexes: Record<string, number>;
    payload: number;
  }>(
    `SELECT pg_relation_size(c.oid)::float8 AS heap,
            coalesce(pg_total_relation_size(nullif(c.reltoastrelid, 0)), 0)::float8 AS toast,
            pg_total_relation_size(c.oid)::float8 AS total,
            (SELECT jsonb_object_agg(replace(ic.relname, $2, ''), pg_relation_size(ic.oid))
               FROM pg_index x JOIN pg_class ic ON ic.oid = x.indexrelid WHERE x.indrelid = c.oid) AS indexes,
            (SELECT sum(pg_column_size(payload))::float8 FROM ${table}) AS payload
       FROM pg_class c WHERE c.oid = $1::regclass`,
    [table, `${table.split('.')[1]}_`],
  );
  const s = sizes[0]!;
  return {
    heap: s.heap / rows,
    toast: s.toast / rows,
    total: s.total / rows,
    payload: s.payload / rows,
    indexes: Object.fromEntries(Object.entries(s.indexes).map(([name, bytes]) => [name, bytes / rows])),
  };
}

export async function layoutScenario(
  database: BenchDatabase,
  settings: LayoutSettings,
): Promise<LayoutReport> {
  const db = new pg.Client({ connectionString: database.url, application_name: 'bench-layout' });
  await db.connect();
  const results: LayoutResult[] = [];
  try {
    // A dated partition as the migrations made it: its columns, defaults, checks and indexes.
    const partition = (
      await db.query<{ name: string }>(`SELECT name FROM hookgate.inbox_partitions ORDER BY from_at LIMIT 1`)
    ).rows[0]!.name;
    const start = '2026-01-01T00:00:00Z';
    for (const [v, variant] of VARIANTS.entries()) {
      for (const order of ['steady', 'burst'] as const) {
        const table = `public.layout_${v}_${order}`;
        const sql = (text: string) => text.replaceAll('{t}', table);
        await db.query(`DROP TABLE IF EXISTS ${table}`);
        await db.query(`CREATE TABLE ${table} (LIKE hookgate.${partition} INCLUDING ALL)`);
        for (const statement of variant.setup) await db.query(sql(statement));
        const settle = async (from: number, to: number) => {
          for (let at = from; at <= to; at += 100) await db.query(sql(SETTLE), [start, at]);
        };
        if (order === 'steady') {
          for (let from = 1; from <= settings.rows; from += settings.round) {
            const to = Math.min(settings.rows, from + settings.round - 1);
            await db.query(sql(INSERT), [from, to, start]);
            await settle(from, to);
            await db.query(`VACUUM ${table}`);
          }
        } else {
          for (let from = 1; from <= settings.rows; from += settings.round)
            await db.query(sql(INSERT), [from, Math.min(settings.rows, from + settings.round - 1), start]);
          await settle(1, settings.rows);
        }
        await db.query(`VACUUM ANALYZE ${table}`);
        results.push({ variant: variant.name, order, ...(await measure(db, table, settings.rows)) });
        await db.query(`DROP TABLE ${table}`);
      }
    }
  } finally {
    await db.end();
  }
  return { scenario: 'layout', settings, results };
}

export function renderLayout(report: LayoutReport): string[] {
  const lines = [
    `layout: ${report.settings.rows} Stripe-like inbox rows per variant, inserted pending and settled once (rounds of ${report.settings.round}), bytes per row after VACUUM; ${availableParallelism()} cores`,
  ];
  for (const r of report.results) {
    lines.push(
      `  ${r.variant.padEnd(72)} ${r.order.padEnd(6)} total ${r.total.toFixed(0).padStart(5)}  heap ${r.heap.toFixed(0).padStart(5)}  toast ${r.toast.toFixed(0).padStart(4)}  payload ${r.payload.toFixed(0).padStart(4)}  beyond the payload ${(r.total - r.payload).toFixed(0).padStart(5)}  (${Object.entries(
        r.indexes,
      )
        .map(([name, bytes]) => `${name} ${bytes.toFixed(0)}`)
        .join(', ')})`,
    );
  }
  return lines;
}
