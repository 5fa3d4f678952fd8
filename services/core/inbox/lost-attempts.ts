import type pg from 'pg';

// Events whose previous attempt was lost with its worker (a crash, a kill, a stall) are applied
// one per transaction, so an event that crashes the worker every time takes no neighbour with it.
// Before such an event runs alone, its row says so (`lone_apply_at`, committed first); if the
// worker dies then, the mark survives and names the event as the likely crasher: it is tried
// after the others.

const MARK = `
  UPDATE hookgate.inbox SET lone_apply_at = now()
   WHERE endpoint = $1 AND event_id = $2 AND status = 'pending'`;

const UNMARK = `
  UPDATE hookgate.inbox SET lone_apply_at = NULL
   WHERE endpoint = $1 AND event_id = $2 AND lone_apply_at IS NOT NULL`;

const MARKED = `
  SELECT event_id FROM hookgate.inbox
   WHERE endpoint = $1 AND event_id = ANY($2::text[]) AND lone_apply_at IS NOT NULL`;

/** Of these events, those a worker died applying on its own. */
export async function lostAlone(
  db: pg.Pool,
  endpoint: string,
  eventIds: readonly string[],
): Promise<Set<string>> {
  const { rows } = await db.query<{ event_id: string }>(MARKED, [endpoint, eventIds]);
  return new Set(rows.map((row) => row.event_id));
}

/**
 * Marks the event as being applied on its own; returns a function that clears the mark once the
 * lone apply has ended without the worker dying.
 */
export async function markAlone(
  db: pg.Pool,
  endpoint: string,
  eventId: string,
): Promise<() => Promise<void>> {
  await db.query(MARK, [endpoint, eventId]);
  return async () => {
    await db.query(UNMARK, [endpoint, eventId]);
  };
}
