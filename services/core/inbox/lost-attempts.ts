import type pg from 'pg';

// Events whose previous attempt was lost with its worker (a crash, a kill, a stall) are applied
// one per transaction, so an event that crashes the worker every time takes no neighbour with it.
// Before such an event runs alone, its row says so (committed first); if the worker dies then,
// the mark survives and names the event as the likely crasher: it is tried after the others.

/** Written before a lone apply; still there afterwards only if the worker died during it. */
export const LOST_ALONE =
  'worker_lost: the worker process ended while applying this event on its own (the event may crash the worker)';

const MARK = `
  UPDATE hookgate.inbox i SET last_error = $3
    FROM (SELECT last_error AS previous FROM hookgate.inbox WHERE endpoint = $1 AND event_id = $2) p
   WHERE i.endpoint = $1 AND i.event_id = $2 AND i.status = 'pending'
  RETURNING p.previous`;

const UNMARK = `
  UPDATE hookgate.inbox SET last_error = $4
   WHERE endpoint = $1 AND event_id = $2 AND last_error = $3`;

const MARKED = `
  SELECT event_id FROM hookgate.inbox
   WHERE endpoint = $1 AND event_id = ANY($2::text[]) AND last_error = $3`;

/** Of these events, those a worker died applying on its own. */
export async function lostAlone(
  db: pg.Pool,
  endpoint: string,
  eventIds: readonly string[],
): Promise<Set<string>> {
  const { rows } = await db.query<{ event_id: string }>(MARKED, [endpoint, eventIds, LOST_ALONE]);
  return new Set(rows.map((row) => row.event_id));
}

/**
 * Marks the event as being applied on its own; returns a function that restores its previous
 * `last_error` once the lone apply has ended without the worker dying (a no-op if the apply
 * recorded an error of its own).
 */
export async function markAlone(
  db: pg.Pool,
  endpoint: string,
  eventId: string,
): Promise<() => Promise<void>> {
  const { rows } = await db.query<{ previous: string | null }>(MARK, [endpoint, eventId, LOST_ALONE]);
  if (rows.length === 0) return async () => {};
  const previous = rows[0]!.previous === LOST_ALONE ? null : rows[0]!.previous;
  return async () => {
    await db.query(UNMARK, [endpoint, eventId, LOST_ALONE, previous]);
  };
}
