import type pg from 'pg';

// Every statement on hookgate.destination_breaker (migration 0014): a destination's circuit
// breaker, shared by every worker. It opens after `failures` consecutive failed attempts (5xx,
// 429, 408, timeouts, network errors; an answer such as a 400 shows the destination is up and
// resets the count), or, with a rate rule, when enough of a window's attempts failed (migration
// 0018); while open, no delivery of that destination is claimed, so none spends a
// retry; after `cooldown` one worker claims one delivery as a probe (half_open), whose success
// closes the breaker and whose failure opens it again.

type Queryable = Pick<pg.Pool | pg.PoolClient, 'query'>;

export interface BreakerSettings {
  readonly failures: number;
  readonly cooldownMs: number;
}

/** $5, the statement's now: the caller's (a test's driven clock) or, when none is passed, the database's. */
const GATE_NOW = 'coalesce($5::timestamptz, now())';

/**
 * Whether this claim may go on: `closed` (claim as usual), `probe` (this caller took the probe:
 * claim one), `open` or `half_open` (claim nothing; `waitSeconds` until the cooldown ends). A
 * probe whose lease ran out (its worker died) may be taken again.
 */
const GATE = `
  WITH probe AS (
    UPDATE hookgate.destination_breaker
       SET state = 'half_open', probe_until = ${GATE_NOW} + make_interval(secs => $4::double precision)
     WHERE endpoint = $1 AND destination = $2
       AND ((state = 'open' AND opened_at + make_interval(secs => $3::double precision) <= ${GATE_NOW})
            OR (state = 'half_open' AND probe_until < ${GATE_NOW}))
    RETURNING 1
  )
  SELECT CASE WHEN EXISTS (SELECT 1 FROM probe) THEN 'probe' ELSE coalesce(b.state, 'closed') END AS gate,
         CASE WHEN b.state = 'open'
              THEN greatest(0, extract(epoch FROM b.opened_at + make_interval(secs => $3::double precision) - ${GATE_NOW}))
              WHEN b.state = 'half_open'
              THEN greatest(0, extract(epoch FROM b.probe_until - ${GATE_NOW}))
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
  now: Date | null = null,
): Promise<{ gate: Gate; waitSeconds: number }> {
  const { rows } = await db.query<{ gate: Gate; wait_seconds: number }>(GATE, [
    endpoint,
    destination,
    settings.cooldownMs / 1000,
    probeLeaseSeconds,
    now,
  ]);
  return { gate: rows[0]!.gate, waitSeconds: rows[0]!.wait_seconds };
}

/**
 * Counts an attempt's result: a success closes the breaker (and, without a rate rule, is not
 * written when it is closed with no failure counted, the common case); a failure counts, opens a
 * closed breaker at the consecutive threshold or when the rate rule trips, and opens a half-open
 * one again. The rate window (rate_since, rate_attempts, rate_failures) starts at its first
 * attempt and is counted anew once `window` has passed; opening or closing the breaker empties it,
 * so a reopened destination is judged on attempts after it came back. Only a failure trips the
 * rate rule. Returns the state after, when written.
 *
 * $3 succeeded, $4 consecutive failures, $5 ratio (null: no rate rule), $6 window seconds,
 * $7 minimum attempts, $8 now (null: the database's clock).
 */
const RECORD_NOW = 'coalesce($8::timestamptz, now())';
const FRESH = `(b.rate_since IS NULL OR b.rate_since + make_interval(secs => $6::double precision) <= ${RECORD_NOW})`;
const ATTEMPTS = `(CASE WHEN ${FRESH} THEN 1 ELSE b.rate_attempts + 1 END)`;
const FAILURES = `(CASE WHEN ${FRESH} THEN (NOT $3)::int ELSE b.rate_failures + (NOT $3)::int END)`;
const RATE_TRIPS = `($5::double precision IS NOT NULL AND NOT $3 AND ${ATTEMPTS} >= $7 AND ${FAILURES} >= $5::double precision * ${ATTEMPTS})`;
const OPENS = `(b.state = 'closed' AND NOT $3 AND (b.consecutive_failures + 1 >= $4 OR ${RATE_TRIPS}))`;
const INSERT_OPENS = `(NOT $3 AND ($4 <= 1 OR ($5::double precision IS NOT NULL AND $7 <= 1 AND 1 >= $5::double precision)))`;
const RECORD = `
  INSERT INTO hookgate.destination_breaker AS b
    (endpoint, destination, state, consecutive_failures, opened_at, rate_since, rate_attempts, rate_failures)
  VALUES ($1, $2,
          CASE WHEN ${INSERT_OPENS} THEN 'open' ELSE 'closed' END,
          CASE WHEN $3 THEN 0 ELSE 1 END,
          CASE WHEN ${INSERT_OPENS} THEN ${RECORD_NOW} END,
          CASE WHEN ${INSERT_OPENS} THEN NULL ELSE ${RECORD_NOW} END,
          CASE WHEN ${INSERT_OPENS} THEN 0 ELSE 1 END,
          CASE WHEN ${INSERT_OPENS} OR $3 THEN 0 ELSE 1 END)
  ON CONFLICT (endpoint, destination) DO UPDATE
    SET consecutive_failures = CASE WHEN $3 THEN 0 ELSE b.consecutive_failures + 1 END,
        state = CASE WHEN $3 THEN 'closed'
                     WHEN b.state IN ('open', 'half_open') THEN 'open'
                     WHEN ${OPENS} THEN 'open'
                     ELSE 'closed' END,
        opened_at = CASE WHEN $3 THEN NULL
                         WHEN b.state = 'half_open' OR ${OPENS} THEN ${RECORD_NOW}
                         ELSE b.opened_at END,
        probe_until = NULL,
        rate_since = CASE WHEN b.state <> 'closed' OR ${OPENS} THEN NULL
                          WHEN ${FRESH} THEN ${RECORD_NOW} ELSE b.rate_since END,
        rate_attempts = CASE WHEN b.state <> 'closed' OR ${OPENS} THEN 0 ELSE ${ATTEMPTS} END,
        rate_failures = CASE WHEN b.state <> 'closed' OR ${OPENS} THEN 0 ELSE ${FAILURES} END
    WHERE NOT ($3 AND b.state = 'closed' AND b.consecutive_failures = 0 AND $5::double precision IS NULL)
  RETURNING state`;

/** The failure-rate rule: open when, in the window, at least `minimum` attempts failed `ratio` or more. */
export interface BreakerRate {
  readonly ratio: number;
  readonly windowMs: number;
  readonly minimum: number;
}

export async function recordBreakerOutcome(
  db: Queryable,
  endpoint: string,
  destination: string,
  succeeded: boolean,
  failures: number,
  rate: BreakerRate | null = null,
  now: Date | null = null,
): Promise<string | null> {
  const { rows } = await db.query<{ state: string }>(RECORD, [
    endpoint,
    destination,
    succeeded,
    failures,
    rate?.ratio ?? null,
    (rate?.windowMs ?? 0) / 1000,
    rate?.minimum ?? 0,
    now,
  ]);
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
