import type pg from 'pg';

// Every statement on hookgate.destination_breaker (migration 0014): a destination's circuit
// breaker, shared by every worker. It opens after `failures` consecutive failed attempts (5xx,
// 429, 408, timeouts, network errors; an answer such as a 400 shows the destination is up and
// resets the count); while open, no delivery of that destination is claimed, so none spends a
// retry; after `cooldown` one worker claims one delivery as a probe (half_open), whose success
// closes the breaker and whose failure opens it again.

type Queryable = Pick<pg.Pool | pg.PoolClient, 'query'>;

export interface BreakerSettings {
  readonly failures: number;
  readonly cooldownMs: number;
}

/**
 * Whether this claim may go on: `closed` (claim as usual), `probe` (this caller took the probe:
 * claim one), `open` or `half_open` (claim nothing; `waitSeconds` until the cooldown ends). A
 * probe whose lease ran out (its worker died) may be taken again.
 */
const GATE = `
  WITH probe AS (
    UPDATE hookgate.destination_breaker
       SET state = 'half_open', probe_until = now() + make_interval(secs => $4::double precision)
     WHERE endpoint = $1 AND destination = $2
       AND ((state = 'open' AND opened_at + make_interval(secs => $3::double precision) <= now())
            OR (state = 'half_open' AND probe_until < now()))
    RETURNING 1
  )
  SELECT CASE WHEN EXISTS (SELECT 1 FROM probe) THEN 'probe' ELSE coalesce(b.state, 'closed') END AS gate,
         CASE WHEN b.state = 'open'
              THEN greatest(0, extract(epoch FROM b.opened_at + make_interval(secs => $3::double precision) - now()))
              WHEN b.state = 'half_open'
              THEN greatest(0, extract(epoch FROM b.probe_until - now()))
              ELSE 0 END::double precision AS wait_seconds
    FROM (SELECT 1) AS one
    LEFT JOIN hookgate.destination_breaker b ON b.endpoint = $1 AND b.destination = $2`;

export type Gate = 'closed' | 'probe' | 'open' | 'half_open';

export async function breakerGate(
  db: Queryable,
  endpoint: string,
  destination: string,
  settings: BreakerSettings,
  probeLeaseSeconds: number,
): Promise<{ gate: Gate; waitSeconds: number }> {
  const { rows } = await db.query<{ gate: Gate; wait_seconds: number }>(GATE, [
    endpoint,
    destination,
    settings.cooldownMs / 1000,
    probeLeaseSeconds,
  ]);
  return { gate: rows[0]!.gate, waitSeconds: rows[0]!.wait_seconds };
}

/**
 * Counts an attempt's result: a success closes the breaker (and is not written when it is
 * closed with no failure counted, the common case); a failure counts, opens a closed breaker at
 * the threshold, and opens a half-open one again. Returns the state after, when written.
 */
const RECORD = `
  INSERT INTO hookgate.destination_breaker AS b (endpoint, destination, state, consecutive_failures, opened_at)
  VALUES ($1, $2,
          CASE WHEN NOT $3 AND $4 <= 1 THEN 'open' ELSE 'closed' END,
          CASE WHEN $3 THEN 0 ELSE 1 END,
          CASE WHEN NOT $3 AND $4 <= 1 THEN now() END)
  ON CONFLICT (endpoint, destination) DO UPDATE
    SET consecutive_failures = CASE WHEN $3 THEN 0 ELSE b.consecutive_failures + 1 END,
        state = CASE WHEN $3 THEN 'closed'
                     WHEN b.state IN ('open', 'half_open') THEN 'open'
                     WHEN b.consecutive_failures + 1 >= $4 THEN 'open'
                     ELSE 'closed' END,
        opened_at = CASE WHEN $3 THEN NULL
                         WHEN b.state = 'half_open' OR (b.state = 'closed' AND b.consecutive_failures + 1 >= $4)
                         THEN now()
                         ELSE b.opened_at END,
        probe_until = NULL
    WHERE NOT ($3 AND b.state = 'closed' AND b.consecutive_failures = 0)
  RETURNING state`;

export async function recordBreakerOutcome(
  db: Queryable,
  endpoint: string,
  destination: string,
  succeeded: boolean,
  failures: number,
): Promise<string | null> {
  const { rows } = await db.query<{ state: string }>(RECORD, [endpoint, destination, succeeded, failures]);
  return rows[0]?.state ?? null;
}

const OPEN_BREAKERS = `
  SELECT endpoint, destination, state FROM hookgate.destination_breaker WHERE state <> 'closed'`;

/** Breakers not closed, for the gauge. */
export async function openBreakers(
  db: Queryable,
): Promise<{ endpoint: string; destination: string; state: 'open' | 'half_open' }[]> {
  return (
    await db.query<{ endpoint: string; destination: string; state: 'open' | 'half_open' }>(OPEN_BREAKERS)
  ).rows;
}
