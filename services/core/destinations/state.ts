import type pg from 'pg';

// Every statement on hookgate.destination_state (migration 0014): whether a destination is
// paused, and who changed that last.

type Queryable = Pick<pg.Pool | pg.PoolClient, 'query'>;

/** Sets paused; returns whether it was paused before (read from the statement's snapshot). */
const SET_PAUSED = `
  WITH before AS (
    SELECT paused FROM hookgate.destination_state WHERE endpoint = $1 AND destination = $2
  ), changed AS (
    INSERT INTO hookgate.destination_state AS s (endpoint, destination, paused, changed_by, reason)
    VALUES ($1, $2, $3, $4, $5)
    ON CONFLICT (endpoint, destination) DO UPDATE
      SET paused = EXCLUDED.paused, changed_by = EXCLUDED.changed_by, changed_at = now(),
          reason = EXCLUDED.reason
    RETURNING 1
  )
  SELECT coalesce((SELECT paused FROM before), false) AS was_paused FROM changed`;

export async function setPaused(
  db: Queryable,
  endpoint: string,
  destination: string,
  paused: boolean,
  actor: string,
  /** Why it was paused (kept while paused; a resume clears it). */
  reason: string | null = null,
): Promise<{ wasPaused: boolean }> {
  const { rows } = await db.query<{ was_paused: boolean }>(SET_PAUSED, [
    endpoint,
    destination,
    paused,
    actor,
    paused ? reason : null,
  ]);
  return { wasPaused: rows[0]?.was_paused ?? false };
}

export interface DestinationState {
  readonly endpoint: string;
  readonly destination: string;
  readonly paused: boolean;
  readonly changed_by: string;
  readonly changed_at: Date;
  readonly reason: string | null;
}

// Looked up by key for the destinations asked about (the configured ones), so a page costs one
// primary-key probe per destination however many rows the table has collected.
const STATES = `
  SELECT s.endpoint, s.destination, s.paused, s.changed_by, s.changed_at, s.reason
    FROM unnest($1::text[], $2::text[]) AS asked (endpoint, destination)
    JOIN hookgate.destination_state s
      ON s.endpoint = asked.endpoint AND s.destination = asked.destination
   ORDER BY s.endpoint, s.destination`;

/** These destinations' pause states (none for one never paused or resumed). */
export async function destinationStates(
  db: Queryable,
  destinations: ReadonlyArray<{ readonly endpoint: string; readonly destination: string }>,
): Promise<DestinationState[]> {
  return (
    await db.query<DestinationState>(STATES, [
      destinations.map((d) => d.endpoint),
      destinations.map((d) => d.destination),
    ])
  ).rows;
}
