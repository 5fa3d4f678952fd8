import { createHash } from 'node:crypto';
import type { Queryable } from '../db/pool.ts';
import type { HeaderBag } from '../providers/types.ts';

// Quarantine (hookgate.quarantine, migrations/0017_quarantine.sql): verified deliveries that
// cannot become inbox events, kept and acknowledged (DESIGN.md promise 8). The one owner of the
// table's SQL with ./actions.ts; batch-first, so a caller storing several pays one statement.

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

/** Headers never kept: credentials of the request itself, not of the delivery. */
const NOT_KEPT = new Set(['authorization', 'proxy-authorization', 'cookie', 'x-hookgate-replay-token']);

/** The headers a release needs to identify the delivery again (its id and type headers). */
export function keptHeaders(headers: HeaderBag): Record<string, string> {
  const kept: Record<string, string> = {};
  for (const [name, value] of Object.entries(headers)) {
    if (value !== undefined && !NOT_KEPT.has(name)) kept[name] = value;
  }
  return kept;
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

// A second copy of the same body (a provider's retry) meets the unique (endpoint, body_digest)
// and is not stored again: the conflict target's DO NOTHING keeps the first row as it was.
const STORE = `
  INSERT INTO hookgate.quarantine (endpoint, reason, message, body, headers, body_digest)
  SELECT q.endpoint, q.reason, left(q.message, 1000), q.body, q.headers, q.digest
    FROM unnest($1::text[], $2::text[], $3::text[], $4::bytea[], $5::jsonb[], $6::bytea[])
      AS q(endpoint, reason, message, body, headers, digest)
  ON CONFLICT (endpoint, body_digest) DO NOTHING`;

/** Stores the entries (autocommit: the caller answers 2xx only after this resolves). */
export async function storeQuarantined(db: Queryable, entries: readonly QuarantineEntry[]): Promise<void> {
  if (entries.length === 0) return;
  await db.query(STORE, [
    entries.map((entry) => entry.endpoint),
    entries.map((entry) => entry.reason),
    entries.map((entry) => entry.message),
    entries.map((entry) => entry.body),
    entries.map((entry) => JSON.stringify(entry.headers)),
    entries.map((entry) => bodyDigest(entry.body)),
  ]);
}
