import type pg from 'pg';
import type { Claim } from './claim.ts';
import { bodyDigestOf } from './claim-sql.ts';

/**
 * For a dry run: per fetched event (in order), its body digest when its id is unsigned (as the
 * claim would store it) and whether deduplication already knows it under its id or its digest, so
 * the count is what the real run would absorb. The keys, not the rows: a key outlives its row by
 * the dedupe horizon. Two index lookups per event (the keys' primary key and
 * inbox_keys_body_digest_key).
 */
const PRESENT = `
  SELECT i.ord::int AS ord, i.digest,
         EXISTS (SELECT 1 FROM hookgate.inbox_keys b WHERE b.endpoint = $1 AND b.event_id = i.event_id)
         OR EXISTS (SELECT 1 FROM hookgate.inbox_keys b WHERE b.endpoint = $1 AND b.body_digest = i.digest) AS present
    FROM (SELECT t.ord, t.event_id, CASE WHEN t.digest_body THEN ${bodyDigestOf('t.payload')} END AS digest
            FROM unnest($2::text[], $3::jsonb[], $4::boolean[]) WITH ORDINALITY AS t(event_id, payload, digest_body, ord)) i
   ORDER BY i.ord`;

export interface Presence {
  /** 1-based position in the claims given. */
  readonly ord: number;
  /** The body digest the claim would store (ids in unsigned headers), else null. */
  readonly digest: Buffer | null;
  /** The inbox holds it already, under its id or its digest. */
  readonly present: boolean;
}

/** Whether each claim (in order) is already in the endpoint's inbox, without claiming anything. */
export async function presentInInbox(
  db: pg.Pool | pg.ClientBase,
  endpoint: string,
  claims: readonly Pick<Claim, 'event' | 'body'>[],
): Promise<Presence[]> {
  const { rows } = await db.query<Presence>(PRESENT, [
    endpoint,
    claims.map((claim) => claim.event.eventId),
    claims.map((claim) => claim.body),
    claims.map((claim) => claim.event.idUnsigned === true),
  ]);
  return rows;
}
