import type pg from 'pg';
import {
  type PruneCounts,
  type PruneOptions,
  pruneInBatches,
  retentionStatements,
} from '../db/batched-delete.ts';

// Every statement on hookgate.inbox_raw: the provider's original bytes and
// pass-through headers of events whose endpoint has a `body: raw` destination. The claim writes
// them in its own statement or transaction (claim-sql.ts and claim.ts embed what is here), the
// destination relay's claim reads them (services/core/destinations/deliveries.ts embeds
// RAW_OF_DELIVERY), and prune deletes them once their inbox row is gone.

type Queryable = Pick<pg.Pool | pg.PoolClient, 'query'>;

/**
 * The one-statement claim's CTE: a raw row for each accepted row whose input carries raw bytes
 * (`raw_body`, base64, and `raw_headers`). `carried` is that statement's accepted rows, each once
 * with its place in the input (`ord`), so a key given twice is written once.
 */
export const INSERT_RAW_FROM_CLAIM = `
    INSERT INTO hookgate.inbox_raw (endpoint, event_id, body, headers)
    SELECT c.endpoint, c.event_id, decode(i.raw_body, 'base64'), coalesce(i.raw_headers, '{}'::jsonb)
      FROM carried c
      JOIN input i ON i.ord = c.ord
     WHERE i.raw_body IS NOT NULL
    ON CONFLICT DO NOTHING`;

const INSERT_RAW_BODIES = `
  INSERT INTO hookgate.inbox_raw (endpoint, event_id, body, headers)
  SELECT * FROM unnest($1::text[], $2::text[], $3::bytea[], $4::jsonb[])
  ON CONFLICT DO NOTHING`;

export interface RawBody {
  readonly endpoint: string;
  readonly eventId: string;
  readonly body: Buffer;
  readonly headers: Readonly<Record<string, string>>;
}

/** The transactional claim's raw rows (accepted claims only), in its transaction. */
export async function insertRawBodies(db: Queryable, rows: readonly RawBody[]): Promise<void> {
  if (rows.length === 0) return;
  await db.query(INSERT_RAW_BODIES, [
    rows.map((r) => r.endpoint),
    rows.map((r) => r.eventId),
    rows.map((r) => r.body),
    rows.map((r) => JSON.stringify(r.headers)),
  ]);
}

/**
 * The relay claim's columns for a `body: raw` destination: the delivery's (alias `d`) original
 * bytes and headers, null when none were kept.
 */
export const RAW_OF_DELIVERY = `
            (SELECT r.body FROM hookgate.inbox_raw r
              WHERE r.endpoint = d.endpoint AND r.event_id = d.event_id) AS raw_body,
            (SELECT r.headers FROM hookgate.inbox_raw r
              WHERE r.endpoint = d.endpoint AND r.event_id = d.event_id) AS raw_headers`;

/**
 * Retention, run by prune after the inbox's: raw rows older than the cutoff whose inbox row is
 * gone (an event still pending, parked or dead keeps its bytes, as it keeps its row), in bounded
 * batches from a cursor through inbox_raw_received_at_idx. Endpoints without a raw destination
 * have no rows here, so they pay one empty index probe per run.
 */
const RETENTION = retentionStatements({
  table: 'hookgate.inbox_raw',
  age: 'received_at',
  where:
    'NOT EXISTS (SELECT 1 FROM hookgate.inbox i WHERE i.endpoint = r.endpoint AND i.event_id = r.event_id)',
});

export function pruneRawBodies(db: pg.Pool, options: PruneOptions): Promise<PruneCounts> {
  return pruneInBatches(db, 'inbox_raw', RETENTION, options);
}
