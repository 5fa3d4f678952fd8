import type pg from 'pg';
import { recordAction } from '../audit/audit.ts';
import type { Queryable } from '../db/pool.ts';
import { withTransaction } from '../db/transaction.ts';
import { WAKEUP_CHANNEL } from '../queue/wakeup.ts';

// Pausing an endpoint (hookgate.endpoint_state, migrations/0001_baseline.sql): the one owner
// of the table's SQL. A paused endpoint's events are held: workers fetch none of its jobs, and an
// apply transaction that started anyway (its worker had not seen the pause yet) hands its events
// back unapplied, charged nothing. The gateway keeps accepting.

/** Arbitrary fixed class id ('paus') of the endpoints' pause fences. */
const PAUSE_LOCK_CLASS = 0x70617573;

/** The endpoint's fence key: FNV-1a of its name, as a signed 32-bit integer (a safe literal). */
export function pauseLockKey(endpoint: string): number {
  let hash = 0x811c9dc5;
  for (const byte of Buffer.from(endpoint, 'utf8')) {
    hash ^= byte;
    hash = Math.imul(hash, 0x01000193);
  }
  return hash | 0;
}

// Endpoint names are validated by the config schema to this shape, so one can be written into the
// BEGIN below as a literal (as NOTIFY's are); the check keeps that true for any caller.
const SAFE_NAME = /^[a-z0-9][a-z0-9_-]{0,62}$/;

/**
 * The BEGIN of an apply transaction of this endpoint, carrying in the same round trip its share
 * of the pause fence and then (a later statement, so a later snapshot: it sees a pause that
 * committed while it waited) whether the endpoint is paused. `pause` takes the fence exclusively:
 * it waits for applies in flight, and those after it see the pause. Read it with pausedAtBegin.
 */
export function beginWithPauseFence(endpoint: string): string {
  if (!SAFE_NAME.test(endpoint))
    throw new Error(`endpoint name ${JSON.stringify(endpoint)} is not safe to inline`);
  return [
    'BEGIN',
    `SELECT pg_advisory_xact_lock_shared(${PAUSE_LOCK_CLASS}, ${pauseLockKey(endpoint)})`,
    `SELECT paused_at IS NOT NULL AS paused FROM hookgate.endpoint_state WHERE endpoint = '${endpoint}'`,
  ].join('; ');
}

/** Whether beginWithPauseFence found the endpoint paused. */
export function pausedAtBegin(begun: readonly pg.QueryResult[]): boolean {
  return (begun[2]?.rows[0] as { paused?: boolean } | undefined)?.paused === true;
}

export interface PauseState {
  readonly endpoint: string;
  readonly paused_at: Date;
  readonly paused_by: string;
  readonly pause_reason: string | null;
  readonly paused_seconds: number;
}

/** Every paused endpoint (a handful of rows: the table has one per endpoint ever paused). */
const PAUSED_ENDPOINTS = `
  SELECT endpoint, paused_at, paused_by, pause_reason,
         EXTRACT(EPOCH FROM clock_timestamp() - paused_at)::float8 AS paused_seconds
    FROM hookgate.endpoint_state
   WHERE paused_at IS NOT NULL
   ORDER BY endpoint`;

export async function pausedEndpoints(db: Queryable): Promise<PauseState[]> {
  return (await db.query<PauseState>(PAUSED_ENDPOINTS)).rows;
}

/** Which of these endpoints are paused (primary-key look-ups). */
const PAUSED_AMONG = `
  SELECT endpoint FROM hookgate.endpoint_state
   WHERE endpoint = ANY($1::text[]) AND paused_at IS NOT NULL`;

export async function pausedAmong(db: Queryable, endpoints: readonly string[]): Promise<Set<string>> {
  if (endpoints.length === 0) return new Set();
  return new Set(
    (await db.query<{ endpoint: string }>(PAUSED_AMONG, [endpoints])).rows.map((row) => row.endpoint),
  );
}

const TAKE_FENCE = `SELECT pg_advisory_xact_lock($1::int, $2::int)`;

/**
 * Takes the endpoint's pause fence exclusively for the rest of `tx`: applies of the endpoint in
 * flight commit first (what they wrote is visible to the statements after this one), and applies
 * after it begin once `tx` ends (and see what it changed). A destination's pause takes it too, so
 * the deliveries an apply in flight writes are held with the rest, not left pending.
 */
export async function fenceEndpointApplies(tx: Queryable, endpoint: string): Promise<void> {
  await tx.query(TAKE_FENCE, [PAUSE_LOCK_CLASS, pauseLockKey(endpoint)]);
}

const SHARE_FENCE = `SELECT pg_advisory_xact_lock_shared($1::int, $2::int)`;

/**
 * Takes the endpoint's pause fence shared for the rest of `tx`, as an apply does: a write that
 * decides from a destination's pause state (a redelivery: held or pending) waits for a pause in
 * flight, and its later statements see it; a pause after it waits for it and holds what it wrote.
 */
export async function shareEndpointFence(tx: Queryable, endpoint: string): Promise<void> {
  await tx.query(SHARE_FENCE, [PAUSE_LOCK_CLASS, pauseLockKey(endpoint)]);
}

const CURRENT = `
  SELECT endpoint, paused_at, paused_by, pause_reason, 0::float8 AS paused_seconds
    FROM hookgate.endpoint_state WHERE endpoint = $1 FOR UPDATE`;

const PAUSE = `
  INSERT INTO hookgate.endpoint_state (endpoint, paused_at, paused_by, pause_reason, updated_at)
  VALUES ($1, now(), $2, $3, now())
  ON CONFLICT (endpoint) DO UPDATE
     SET paused_at = now(), paused_by = EXCLUDED.paused_by, pause_reason = EXCLUDED.pause_reason,
         updated_at = now()
  RETURNING endpoint, paused_at, paused_by, pause_reason, 0::float8 AS paused_seconds`;

const RESUME = `
  UPDATE hookgate.endpoint_state
     SET paused_at = NULL, paused_by = NULL, pause_reason = NULL, updated_at = now()
   WHERE endpoint = $1`;

/** Wakes the endpoint's idle worker loops as the resume commits. */
const WAKE = `SELECT pg_notify($1, $2)`;

export interface PauseRequest {
  readonly endpoint: string;
  readonly actor: string;
  readonly reason?: string | undefined;
}

export interface PauseSummary {
  readonly endpoint: string;
  /** Whether this call changed the state (false: it was already so). */
  readonly changed: boolean;
  /** The pause now in force (pause), or the one just lifted (resume); null if none. */
  readonly pause: PauseState | null;
}

/**
 * Pauses an endpoint: waits for its applies in flight (the fence), marks it paused, audits, in
 * one transaction. Already paused: nothing changes (the first pause's who and why stay).
 */
export async function pauseEndpoint(pool: pg.Pool, request: PauseRequest): Promise<PauseSummary> {
  return withTransaction(pool, async (tx) => {
    await fenceEndpointApplies(tx, request.endpoint);
    const current = (await tx.query<PauseState>(CURRENT, [request.endpoint])).rows[0];
    const already = current?.paused_at ? current : null;
    const pause =
      already ??
      (await tx.query<PauseState>(PAUSE, [request.endpoint, request.actor, request.reason ?? null])).rows[0]!;
    await recordAction(tx, {
      actor: request.actor,
      command: 'pause',
      endpoint: request.endpoint,
      filters: {},
      count: already ? 0 : 1,
      dryRun: false,
      reason: request.reason,
    });
    return { endpoint: request.endpoint, changed: !already, pause };
  });
}

/** Resumes an endpoint: its held events are fetched again in their order; audited. */
export async function resumeEndpoint(pool: pg.Pool, request: PauseRequest): Promise<PauseSummary> {
  return withTransaction(pool, async (tx) => {
    const current = (await tx.query<PauseState>(CURRENT, [request.endpoint])).rows[0];
    const lifted = current?.paused_at ? current : null;
    if (lifted) {
      await tx.query(RESUME, [request.endpoint]);
      await tx.query(WAKE, [WAKEUP_CHANNEL, request.endpoint]);
    }
    await recordAction(tx, {
      actor: request.actor,
      command: 'resume',
      endpoint: request.endpoint,
      filters: lifted ? { paused_at: lifted.paused_at.toISOString(), paused_by: lifted.paused_by } : {},
      count: lifted ? 1 : 0,
      dryRun: false,
      reason: request.reason,
    });
    return { endpoint: request.endpoint, changed: lifted !== null, pause: lifted };
  });
}
