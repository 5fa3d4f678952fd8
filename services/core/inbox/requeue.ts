// `hookgate requeue`: parked, dead (and, when asked, discarded) and orphaned events back to
// pending with a live job each.
import type pg from 'pg';
import type { PgBoss } from 'pg-boss';
import { recordAction } from '../audit/audit.ts';
import { withTransaction } from '../db/transaction.ts';
import { EVENTS_PER_JOB } from './dispatch.ts';
import { type SweepPolicy, sweepOrphans } from './orphans.ts';
import {
  type EventSelection,
  PREVIEW_SELECTED,
  SELECTED,
  type SelectedEvent,
  selectionFilters,
  selectionParams,
} from './selection.ts';

/** How many events a requeue would move now (the progress bar's total). */
const COUNT_REQUEUE = `
  SELECT count(*)::bigint AS n FROM (
    SELECT 1 FROM hookgate.inbox WHERE ${SELECTED} LIMIT $4
  ) matching`;

/**
 * Moves parked/dead rows back to pending, each batch of EVENTS_PER_JOB under a new apply job that
 * names them, with a fresh retry budget counted on from their attempts: the baseline migration's
 * SECURITY DEFINER function, the one way the console's role (and the CLI) requeues. It locks the
 * rows, so two requeues cannot both move one event, and writes only apply jobs of the endpoint's
 * queue for rows that exist.
 */
const REQUEUE_ROWS = `
  SELECT event_id, attempts
    FROM hookgate.requeue_events($1::text, $2::text[], $3::text[], $5::text, $6::timestamptz, $7::timestamptz,
                                 $4::int, $8::int)`;

export interface RequeueRequest extends EventSelection {
  /** `discarded` only when the operator asks for it (`--status discarded`). */
  readonly statuses: readonly ('parked' | 'dead' | 'discarded')[];
  /** Most events moved in all (default: no limit). */
  readonly limit?: number | undefined;
  /** Rows per transaction. */
  readonly chunk?: number;
  /** Called after each committed chunk with the number of events it moved. */
  readonly onChunk?: (moved: number) => void;
  /** Who asked (recorded in hookgate.audit with what moved). */
  readonly actor: string;
}

/** The filters an audit row records for a requeue. */
export function requeueFilters(request: RequeueRequest): Record<string, unknown> {
  return {
    ...selectionFilters(request),
    ...(request.limit !== undefined ? { limit: request.limit } : {}),
  };
}

export async function countRequeue(pool: pg.Pool, request: RequeueRequest): Promise<number> {
  const limit = request.limit ?? 1_000_000;
  const result = await pool.query<{ n: string }>(COUNT_REQUEUE, selectionParams(request, limit));
  return Number(result.rows[0]?.n ?? 0);
}

/** The events `requeue` would move now, oldest first; changes nothing. */
export async function previewRequeue(pool: pg.Pool, request: RequeueRequest): Promise<SelectedEvent[]> {
  const limit = request.limit ?? 1_000_000;
  return (await pool.query<SelectedEvent>(PREVIEW_SELECTED, selectionParams(request, limit))).rows;
}

/**
 * Requeues in chunks, each one statement and transaction: rows back to pending, and their jobs
 * (REQUEUE_ROWS); then records the action, with every event it moved, in the audit trail.
 */
export async function requeue(pool: pg.Pool, request: RequeueRequest): Promise<string[]> {
  const all = await requeueChunks(pool, request);
  await recordAction(pool, {
    actor: request.actor,
    command: 'requeue',
    endpoint: request.endpoint,
    filters: requeueFilters(request),
    count: all.length,
    dryRun: false,
    eventIds: all,
  });
  return all;
}

async function requeueChunks(pool: pg.Pool, request: RequeueRequest): Promise<string[]> {
  const chunk = request.chunk ?? 500;
  const all: string[] = [];
  for (;;) {
    const remaining = request.limit === undefined ? chunk : Math.min(chunk, request.limit - all.length);
    if (remaining <= 0) return all;
    const result = await pool.query<{ event_id: string; attempts: number }>(REQUEUE_ROWS, [
      ...selectionParams(request, remaining),
      EVENTS_PER_JOB,
    ]);
    const ids = result.rows.map((row) => row.event_id);
    all.push(...ids);
    request.onChunk?.(ids.length);
    if (ids.length < remaining) return all;
  }
}

/** What `requeue --orphans` did, or would do: the events sent again, and those ended. */
export interface OrphansResult {
  readonly redispatched: string[];
  readonly ended: string[];
}

/**
 * `requeue --orphans`: the sweeper's work, now, for one endpoint and whatever the rows' age —
 * pending rows whose job is finished or gone get a new job (or end, out of attempts).
 */
export async function requeueOrphans(
  pool: pg.Pool,
  boss: PgBoss,
  endpoint: string,
  policy: Pick<SweepPolicy, 'maxAttempts'>,
  actor: string,
  limit = 10_000,
): Promise<OrphansResult> {
  return withTransaction(pool, async (client) => {
    const result = await sweep(client, boss, endpoint, policy, limit);
    // In the sweep's transaction: the audit row commits with what it changed.
    await recordAction(client, {
      actor,
      command: 'requeue',
      endpoint,
      filters: { orphans: true, limit },
      count: result.redispatched.length + result.ended.length,
      dryRun: false,
      eventIds: [...result.redispatched, ...result.ended],
    });
    return result;
  });
}

/**
 * `requeue --orphans --dry-run`: the same sweep in a transaction that is rolled back, so what it
 * reports is exactly what a real run would do now, and nothing changes.
 */
export async function findOrphans(
  pool: pg.Pool,
  boss: PgBoss,
  endpoint: string,
  policy: Pick<SweepPolicy, 'maxAttempts'>,
  limit = 10_000,
): Promise<OrphansResult> {
  const client = await pool.connect();
  try {
    await client.query('BEGIN');
    return await sweep(client, boss, endpoint, policy, limit);
  } finally {
    await client.query('ROLLBACK').catch(() => {});
    client.release();
  }
}

async function sweep(
  client: pg.PoolClient,
  boss: PgBoss,
  endpoint: string,
  policy: Pick<SweepPolicy, 'maxAttempts'>,
  limit: number,
): Promise<OrphansResult> {
  const pageSize = Math.min(1_000, limit);
  const result = await sweepOrphans(client, boss, endpoint, {
    maxAttempts: policy.maxAttempts,
    graceSeconds: 0,
    pageSize,
    maxPages: Math.ceil(limit / pageSize),
  });
  return { redispatched: result.redispatched, ended: result.ended.map((row) => row.eventId) };
}
