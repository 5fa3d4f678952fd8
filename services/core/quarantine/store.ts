import { createHash } from 'node:crypto';
import type { Queryable } from '../db/pool.ts';
import { type HeaderRules, quarantineHeaders } from '../providers/headers.ts';
import type { HeaderBag } from '../providers/types.ts';

// Quarantine (hookgate.quarantine, migrations/0001_baseline.sql): verified deliveries that
// cannot become inbox events, kept and acknowledged (promise 8, docs/architecture.md). The one
// owner of the table's SQL with ./actions.ts; batch-first, so a caller storing several pays one
// statement.

/** The refusals of a verified delivery that quarantine keeps instead of refusing. */
export const QUARANTINE_REASONS = [
  'version_invalid',
  'payload_unstorable',
  'event_id_invalid',
  'event_type_missing',
] as const;
export type QuarantineReason = (typeof QUARANTINE_REASONS)[number];

export function isQuarantineReason(code: string): code is QuarantineReason {
  return (QUARANTINE_REASONS as readonly string[]).includes(code);
}

/**
 * The headers kept with a quarantined delivery: an allow-list from the endpoint's provider (its
 * id, type, timestamp and delivery headers: what a release needs to identify it again), never
 * its signature or token header nor any other credential.
 */
export function keptHeaders(headers: HeaderBag, rules: HeaderRules): Record<string, string> {
  return quarantineHeaders(headers, rules);
}

export interface QuarantineEntry {
  readonly endpoint: string;
  readonly reason: QuarantineReason;
  readonly message: string;
  /** The raw body as received (bounded by the endpoint's body limit). */
  readonly body: Buffer;
  readonly headers: Readonly<Record<string, string>>;
}

export function bodyDigest(body: Buffer): Buffer {
  return createHash('sha256').update(body).digest();
}

/** What became of one entry: kept now, kept already (a copy of a held body), or refused (cap). */
export type StoreOutcome = 'stored' | 'already_kept' | 'full';

// A second copy of the same body (a provider's retry) meets the unique (endpoint, body_digest)
// and is not stored again: the conflict target's DO NOTHING keeps the first row as it was, and the
// copy is answered as kept. The cap ($7) counts each endpoint's held rows through
// quarantine_held_reason_idx, at most $7 of them (LIMIT): a full quarantine costs one bounded index
// read per refused delivery. Concurrent inserts may each see room and pass the cap together, by at
// most the gateway's concurrent quarantines; the bound is on the order of the cap, not exact.
const STORE = `
  WITH q AS (
    SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::bytea[], $5::jsonb[], $6::bytea[])
      WITH ORDINALITY AS q(endpoint, reason, message, body, headers, digest, n)
  ), held AS (
    SELECT e.endpoint,
           (SELECT count(*) FROM (SELECT 1 FROM hookgate.quarantine h
                                   WHERE h.endpoint = e.endpoint
                                     AND h.released_at IS NULL AND h.dropped_at IS NULL
                                   LIMIT $7) AS c)::int AS rows
      FROM (SELECT DISTINCT endpoint FROM q) AS e
  ), kept AS (
    SELECT q.n FROM q
     WHERE EXISTS (SELECT 1 FROM hookgate.quarantine k WHERE k.endpoint = q.endpoint AND k.body_digest = q.digest)
  ), stored AS (
    INSERT INTO hookgate.quarantine (endpoint, reason, message, body, headers, body_digest)
    SELECT q.endpoint, q.reason, left(q.message, 1000), q.body, q.headers, q.digest
      FROM q JOIN held USING (endpoint)
     WHERE held.rows + (SELECT count(*) FROM q AS before WHERE before.endpoint = q.endpoint AND before.n < q.n) < $7
       AND q.n NOT IN (SELECT n FROM kept)
    ON CONFLICT (endpoint, body_digest) DO NOTHING
    RETURNING endpoint, body_digest
  )
  SELECT q.n::int AS n,
         CASE WHEN q.n IN (SELECT n FROM kept) THEN 'already_kept'
              WHEN EXISTS (SELECT 1 FROM stored s WHERE s.endpoint = q.endpoint AND s.body_digest = q.digest)
                THEN 'stored'
              -- Not inserted for its conflict: a concurrent copy committed first, kept.
              WHEN held.rows + (SELECT count(*) FROM q AS before WHERE before.endpoint = q.endpoint AND before.n < q.n) < $7
                THEN 'already_kept'
              ELSE 'full' END AS outcome
    FROM q JOIN held USING (endpoint)
   ORDER BY q.n`;

/**
 * Stores the entries (autocommit: the caller answers 2xx only after this resolves) within each
 * endpoint's cap of held rows; returns each entry's outcome, in order.
 */
export async function storeQuarantined(
  db: Queryable,
  entries: readonly QuarantineEntry[],
  maxHeldPerEndpoint: number,
): Promise<StoreOutcome[]> {
  if (entries.length === 0) return [];
  const result = await db.query<{ n: number; outcome: StoreOutcome }>(STORE, [
    entries.map((entry) => entry.endpoint),
    entries.map((entry) => entry.reason),
    entries.map((entry) => entry.message),
    entries.map((entry) => entry.body),
    entries.map((entry) => JSON.stringify(entry.headers)),
    entries.map((entry) => bodyDigest(entry.body)),
    maxHeldPerEndpoint,
  ]);
  return result.rows.map((row) => row.outcome);
}

export interface HeldCount {
  readonly endpoint: string;
  readonly reason: string;
  readonly rows: number;
}

// Read from quarantine_held_reason_idx alone (partial: held rows only, at most the cap per
// endpoint), so a scrape costs the held rows, never the released and dropped history.
const HELD_COUNTS = `
  SELECT endpoint, reason, count(*)::int AS rows
    FROM hookgate.quarantine
   WHERE released_at IS NULL AND dropped_at IS NULL
   GROUP BY endpoint, reason`;

/** Held rows per endpoint and reason (the gauge's reading). */
export async function heldCounts(db: Queryable): Promise<HeldCount[]> {
  return (await db.query<HeldCount>(HELD_COUNTS)).rows;
}
