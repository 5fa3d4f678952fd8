// `hookgate discard`: parked or dead events settled for good as `discarded`, with who, why and when
// on the row, and the action in the audit trail, in one transaction.
import type pg from 'pg';
import { recordAction } from '../audit/audit.ts';
import { withTransaction } from '../db/transaction.ts';

/** The optional filters ($3 ids, $5 type, $6 since, $7 until): NULL means "any". */
const DISCARD_FILTER = `($3::text[] IS NULL OR event_id = ANY($3::text[]))
       AND ($5::text IS NULL OR event_type = $5)
       AND ($6::timestamptz IS NULL OR received_at >= $6)
       AND ($7::timestamptz IS NULL OR received_at < $7)`;

/** What a discard would settle, for `--dry-run` (no locks, nothing changed). */
const PREVIEW_DISCARD = `
  SELECT event_id, event_type, status, attempts, last_error, received_at
    FROM hookgate.inbox
   WHERE endpoint = $1 AND status = ANY($2::text[]) AND ${DISCARD_FILTER}
   ORDER BY received_at, event_id
   LIMIT $4`;

/**
 * Locks the matching rows, then settles them: migration 0024's SECURITY DEFINER function, the one
 * way the console's role (and the CLI) discards, which takes parked and dead rows only. A row a
 * concurrent requeue moved to pending while this waited for its lock no longer matches (READ
 * COMMITTED re-checks the WHERE of a row it waited for) and is left alone: each event ends in
 * exactly one of the two actions.
 */
const DISCARD_ROWS = `
  SELECT event_id
    FROM hookgate.discard_events($1::text, $2::text[], $3::text[], $5::text, $6::timestamptz, $7::timestamptz,
                                 $4::int, $8::text, $9::text)`;

export interface DiscardRequest {
  readonly endpoint: string;
  readonly statuses: readonly ('parked' | 'dead')[];
  /** Only these events (none: any). */
  readonly eventIds?: readonly string[] | undefined;
  readonly eventType?: string | undefined;
  readonly since?: Date | undefined;
  readonly until?: Date | undefined;
  /** Most events settled in one run (one transaction). */
  readonly limit: number;
  readonly reason: string;
  readonly actor: string;
  readonly dryRun?: boolean | undefined;
}

export interface DiscardCandidate {
  readonly event_id: string;
  readonly event_type: string;
  readonly status: string;
  readonly attempts: number;
  readonly last_error: string | null;
  readonly received_at: Date;
}

export interface DiscardSummary {
  readonly endpoint: string;
  readonly dryRun: boolean;
  /** Events discarded (or, in a dry run, that would be). */
  readonly count: number;
  readonly eventIds: string[];
  /** A dry run's events, with their state now. */
  readonly candidates?: DiscardCandidate[];
  /** Ids asked for that were not parked or dead. */
  readonly notDiscarded: string[];
}

function params(request: DiscardRequest): unknown[] {
  return [
    request.endpoint,
    request.statuses,
    request.eventIds && request.eventIds.length > 0 ? request.eventIds : null,
    request.limit,
    request.eventType ?? null,
    request.since ?? null,
    request.until ?? null,
  ];
}

function filtersOf(request: DiscardRequest): Record<string, unknown> {
  return {
    statuses: request.statuses,
    ...(request.eventIds && request.eventIds.length > 0 ? { ids: request.eventIds } : {}),
    ...(request.eventType ? { type: request.eventType } : {}),
    ...(request.since ? { since: request.since.toISOString() } : {}),
    ...(request.until ? { until: request.until.toISOString() } : {}),
    limit: request.limit,
  };
}

/**
 * Discards the matching parked/dead events of one endpoint (a dry run lists them and changes
 * nothing); either way the action is audited, a real run in its own transaction.
 */
export async function discard(pool: pg.Pool, request: DiscardRequest): Promise<DiscardSummary> {
  const audit = (client: pg.ClientBase | pg.Pool, ids: string[], dryRun: boolean) =>
    recordAction(client, {
      actor: request.actor,
      command: 'discard',
      endpoint: request.endpoint,
      filters: filtersOf(request),
      count: ids.length,
      dryRun,
      eventIds: ids,
      reason: request.reason,
    });
  const missing = (ids: readonly string[]) => (request.eventIds ?? []).filter((id) => !ids.includes(id));
  if (request.dryRun) {
    const candidates = (await pool.query<DiscardCandidate>(PREVIEW_DISCARD, params(request))).rows;
    const ids = candidates.map((candidate) => candidate.event_id);
    await audit(pool, ids, true);
    return {
      endpoint: request.endpoint,
      dryRun: true,
      count: ids.length,
      eventIds: ids,
      candidates,
      notDiscarded: missing(ids),
    };
  }
  const ids = await withTransaction(pool, async (client) => {
    const result = await client.query<{ event_id: string }>(DISCARD_ROWS, [
      ...params(request),
      request.actor,
      request.reason,
    ]);
    const moved = result.rows.map((row) => row.event_id);
    await audit(client, moved, false);
    return moved;
  });
  return {
    endpoint: request.endpoint,
    dryRun: false,
    count: ids.length,
    eventIds: ids,
    notDiscarded: missing(ids),
  };
}
