import type { Queryable } from '../db/pool.ts';

/** One primary-key lookup per id, in one statement: the keys, which outlive their rows. */
const KNOWN = `
  SELECT i.event_id
    FROM unnest($2::text[]) AS k(event_id)
    JOIN hookgate.inbox_keys i ON i.endpoint = $1 AND i.event_id = k.event_id`;

/**
 * Of these event ids, those deduplication knows (the inbox holds them, or held them within the
 * dedupe horizon), so a reconciliation listing can skip
 * fetching their bodies (GitHub: one request per delivery). An id it lacks is fetched and
 * claimed, and the claim still absorbs a copy stored under another id by its body digest.
 */
export async function knownEventIds(
  db: Queryable,
  endpoint: string,
  eventIds: readonly string[],
): Promise<ReadonlySet<string>> {
  if (eventIds.length === 0) return new Set();
  const { rows } = await db.query<{ event_id: string }>(KNOWN, [endpoint, eventIds]);
  return new Set(rows.map((row) => row.event_id));
}
