import type { Queryable } from '../db/pool.ts';

// hookgate.reconcile_state: every statement on it is here.

/**
 * Takes the endpoint's lease when nobody holds it or its holder let it expire (a run that died),
 * making the row on an endpoint's first run. No row back: another run holds it.
 */
const TAKE_LEASE = `
  INSERT INTO hookgate.reconcile_state AS s (endpoint, lease_owner, lease_until, last_run_started_at)
  VALUES ($1, $2, clock_timestamp() + make_interval(secs => $3::float8), clock_timestamp())
  ON CONFLICT (endpoint) DO UPDATE
     SET lease_owner = EXCLUDED.lease_owner, lease_until = EXCLUDED.lease_until,
         last_run_started_at = EXCLUDED.last_run_started_at
   WHERE s.lease_owner IS NULL OR s.lease_until < clock_timestamp()
  RETURNING covered_since, watermark`;

const READ_ONE = `
  SELECT covered_since, watermark FROM hookgate.reconcile_state WHERE endpoint = $1`;

const RENEW_LEASE = `
  UPDATE hookgate.reconcile_state
     SET lease_until = clock_timestamp() + make_interval(secs => $3::float8)
   WHERE endpoint = $1 AND lease_owner = $2::uuid
  RETURNING endpoint`;

/** Moves the watermark forward only (GREATEST), and only for the lease's holder. */
const ADVANCE = `
  UPDATE hookgate.reconcile_state
     SET covered_since = COALESCE(covered_since, $3::timestamptz), watermark = GREATEST(watermark, $4::timestamptz)
   WHERE endpoint = $1 AND lease_owner = $2::uuid
  RETURNING endpoint`;

/** Records the run's figures and lets the lease go; the watermark is not touched here. */
const FINISH = `
  UPDATE hookgate.reconcile_state
     SET lease_owner = NULL, lease_until = NULL,
         last_run_finished_at = clock_timestamp(), last_outcome = $3::text, last_error = $4::text,
         last_success_at = CASE WHEN $3::text = 'complete' THEN clock_timestamp() ELSE last_success_at END,
         last_listed = $5::int, last_present = $6::int, last_filled = $7::int, last_unusable = $8::int,
         last_delivery_failures = $9::int, last_api_calls = $10::int, last_duration_ms = $11::int,
         missing_total = missing_total + $7::int, runs_total = runs_total + 1
   WHERE endpoint = $1 AND lease_owner = $2::uuid
  RETURNING endpoint`;

const READ_ALL = `
  SELECT endpoint, covered_since, watermark, lease_until > clock_timestamp() AS running,
         last_run_started_at, last_run_finished_at, last_outcome, last_error, last_success_at,
         last_listed, last_present, last_filled, last_unusable, last_delivery_failures,
         last_api_calls, last_duration_ms, missing_total::float8 AS missing_total, runs_total::float8 AS runs_total
    FROM hookgate.reconcile_state
   ORDER BY endpoint`;

export interface LeasedState {
  readonly coveredSince: Date | null;
  readonly watermark: Date | null;
}

/** The endpoint's state with its lease taken for `owner`, or null while another run holds it. */
export async function takeLease(
  db: Queryable,
  endpoint: string,
  owner: string,
  ttlSeconds: number,
): Promise<LeasedState | null> {
  const { rows } = await db.query<{ covered_since: Date | null; watermark: Date | null }>(TAKE_LEASE, [
    endpoint,
    owner,
    ttlSeconds,
  ]);
  const row = rows[0];
  return row ? { coveredSince: row.covered_since, watermark: row.watermark } : null;
}

/** The endpoint's watermark without taking its lease (dry runs). */
export async function peekState(db: Queryable, endpoint: string): Promise<LeasedState> {
  const { rows } = await db.query<{ covered_since: Date | null; watermark: Date | null }>(READ_ONE, [
    endpoint,
  ]);
  return { coveredSince: rows[0]?.covered_since ?? null, watermark: rows[0]?.watermark ?? null };
}

/** False when the lease is no longer `owner`'s (it expired and another run took it). */
export async function renewLease(db: Queryable, endpoint: string, owner: string, ttlSeconds: number) {
  return (await db.query(RENEW_LEASE, [endpoint, owner, ttlSeconds])).rows.length === 1;
}

export async function advanceWatermark(
  db: Queryable,
  endpoint: string,
  owner: string,
  coveredSince: Date,
  watermark: Date,
): Promise<boolean> {
  return (await db.query(ADVANCE, [endpoint, owner, coveredSince, watermark])).rows.length === 1;
}

export interface RunFigures {
  readonly outcome: 'complete' | 'budget' | 'failed' | 'lease_lost' | 'stopped';
  readonly error: string | null;
  readonly listed: number;
  readonly present: number;
  readonly filled: number;
  readonly unusable: number;
  readonly deliveryFailures: number;
  readonly apiCalls: number;
  readonly durationMs: number;
}

export async function finishRun(
  db: Queryable,
  endpoint: string,
  owner: string,
  figures: RunFigures,
): Promise<boolean> {
  const { rows } = await db.query(FINISH, [
    endpoint,
    owner,
    figures.outcome,
    figures.error,
    figures.listed,
    figures.present,
    figures.filled,
    figures.unusable,
    figures.deliveryFailures,
    figures.apiCalls,
    Math.round(figures.durationMs),
  ]);
  return rows.length === 1;
}

export interface ReconcileState {
  readonly endpoint: string;
  readonly coveredSince: Date | null;
  /** Every event the provider listed between coveredSince and this is in the inbox. */
  readonly watermark: Date | null;
  readonly running: boolean;
  readonly lastRunStartedAt: Date | null;
  readonly lastRunFinishedAt: Date | null;
  readonly lastOutcome: string | null;
  readonly lastError: string | null;
  readonly lastSuccessAt: Date | null;
  readonly last: {
    readonly listed: number;
    readonly present: number;
    readonly filled: number;
    readonly unusable: number;
    readonly deliveryFailures: number;
    readonly apiCalls: number;
    readonly durationMs: number;
  };
  readonly missingTotal: number;
  readonly runsTotal: number;
}

interface StateRow {
  endpoint: string;
  covered_since: Date | null;
  watermark: Date | null;
  running: boolean | null;
  last_run_started_at: Date | null;
  last_run_finished_at: Date | null;
  last_outcome: string | null;
  last_error: string | null;
  last_success_at: Date | null;
  last_listed: number;
  last_present: number;
  last_filled: number;
  last_unusable: number;
  last_delivery_failures: number;
  last_api_calls: number;
  last_duration_ms: number;
  missing_total: number;
  runs_total: number;
}

/** Every endpoint that has reconciled at least once (one query: status and metrics read this). */
export async function readStates(db: Queryable): Promise<ReconcileState[]> {
  const { rows } = await db.query<StateRow>(READ_ALL);
  return rows.map((row) => ({
    endpoint: row.endpoint,
    coveredSince: row.covered_since,
    watermark: row.watermark,
    running: row.running === true,
    lastRunStartedAt: row.last_run_started_at,
    lastRunFinishedAt: row.last_run_finished_at,
    lastOutcome: row.last_outcome,
    lastError: row.last_error,
    lastSuccessAt: row.last_success_at,
    last: {
      listed: row.last_listed,
      present: row.last_present,
      filled: row.last_filled,
      unusable: row.last_unusable,
      deliveryFailures: row.last_delivery_failures,
      apiCalls: row.last_api_calls,
      durationMs: row.last_duration_ms,
    },
    missingTotal: row.missing_total,
    runsTotal: row.runs_total,
  }));
}
