import { hostname } from 'node:os';
import type pg from 'pg';
import {
  type PruneCounts,
  type PruneOptions,
  pruneInBatches,
  retentionStatements,
} from '../db/batched-delete.ts';
import type { Queryable } from '../db/pool.ts';

// The per-attempt history (hookgate.apply_attempts, migrations/0001_baseline.sql): one row per
// apply attempt, the one owner of the table's SQL. The engine's rows ride on the settle statement
// of the attempt's transaction (recordAttemptsCte): no round trip of their own.

/** Which process made an attempt: `host:pid` (a pod's name is its host name). */
export const THIS_WORKER = `${hostname()}:${process.pid}`.slice(0, 200);

/** Most characters of an attempt's error message kept. */
const MESSAGE_KEPT = 2000;

/** How an attempt ended: settled so, failed (to be retried), or ended parked/dead. */
export type AttemptOutcome = 'processed' | 'ignored' | 'stale' | 'failed' | 'parked' | 'dead';

export interface AttemptRecord {
  readonly eventId: string;
  readonly attempt: number;
  readonly outcome: AttemptOutcome;
  readonly errorCode?: string | undefined;
  readonly errorMessage?: string | undefined;
}

export interface AttemptBatch {
  readonly worker: string;
  /** How long the batch's apply took (every event of a batch shares it). */
  readonly durationMs: number;
  readonly records: readonly AttemptRecord[];
}

/**
 * A data-modifying CTE named `recorded`, for the statement that settles the batch's rows: the
 * endpoint is parameter $`endpoint`, attemptParams's seven values are $`first`.. in order. Built
 * from numbers only.
 */
export function recordAttemptsCte(endpoint: number, first: number): string {
  const p = (n: number) => `$${first + n}`;
  return `
  recorded AS (
    INSERT INTO hookgate.apply_attempts (endpoint, event_id, attempt, worker, duration_ms, outcome, error_code, error_message)
    SELECT $${endpoint}, a.event_id, a.attempt, ${p(0)}::text, ${p(1)}::float8, a.outcome, a.error_code, a.error_message
      FROM unnest(${p(2)}::text[], ${p(3)}::int[], ${p(4)}::text[], ${p(5)}::text[], ${p(6)}::text[])
        AS a(event_id, attempt, outcome, error_code, error_message)
  )`;
}

/** The seven values recordAttemptsCte places from its `first` parameter. */
export function attemptParams(batch: AttemptBatch): unknown[] {
  return [
    batch.worker,
    Math.max(0, batch.durationMs),
    batch.records.map((r) => r.eventId),
    batch.records.map((r) => r.attempt),
    batch.records.map((r) => r.outcome),
    batch.records.map((r) => r.errorCode ?? null),
    batch.records.map((r) => (r.errorMessage === undefined ? null : r.errorMessage.slice(0, MESSAGE_KEPT))),
  ];
}

const RECORD_ATTEMPTS = `
  WITH ${recordAttemptsCte(1, 2)}
  SELECT 1`;

/** Records attempts on their own (a batch whose transaction failed: nothing else committed). */
export async function recordAttempts(db: Queryable, endpoint: string, batch: AttemptBatch): Promise<void> {
  if (batch.records.length === 0) return;
  await db.query(RECORD_ATTEMPTS, [endpoint, ...attemptParams(batch)]);
}

export interface AttemptRow {
  readonly attempt: number;
  readonly at: Date;
  readonly worker: string;
  readonly outcome: string;
  readonly error_code: string | null;
  readonly error_message: string | null;
  readonly duration_ms: number;
}

const EVENT_ATTEMPTS = `
  SELECT attempt, at, worker, outcome, error_code, error_message, duration_ms
    FROM hookgate.apply_attempts
   WHERE endpoint = $1 AND event_id = $2
   ORDER BY at, id
   LIMIT 1000`;

export async function attemptsOf(db: Queryable, endpoint: string, eventId: string): Promise<AttemptRow[]> {
  return (await db.query<AttemptRow>(EVENT_ATTEMPTS, [endpoint, eventId])).rows;
}

/** Retention (batched-delete.ts's cursor walk), through apply_attempts_at_idx. */
const RETENTION = retentionStatements({ table: 'hookgate.apply_attempts', age: 'at' });

export function pruneAttempts(db: pg.Pool, options: PruneOptions): Promise<PruneCounts> {
  return pruneInBatches(db, 'apply_attempts', RETENTION, options);
}
