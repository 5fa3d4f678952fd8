// `hookgate discard`: parked or dead events settled for good as `discarded`, with who, why and when
// on the row, and the action in the audit trail, in one transaction.
import type pg from 'pg';
import { recordAction } from '../audit/audit.ts';
import { withTransaction } from '../db/transaction.ts';
import {
  type EventSelection,
  PREVIEW_SELECTED,
  type SelectedEvent,
  selectionFilters,
  selectionParams,
} from './selection.ts';

/**
 * Locks the matching rows, then settles them: the baseline migration's SECURITY DEFINER function,
 * the one way the console's role (and the CLI) discards, which takes parked and dead rows only. A
 * row a concurrent requeue moved to pending while this waited for its lock no longer matches (READ
 * COMMITTED re-checks the WHERE of a row it waited for) and is left alone: each event ends in
 * exactly one of the two actions.
 */
const DISCARD_ROWS = `
  SELECT event_id
    FROM hookgate.discard_events($1::text, $2::text[], $3::text[], $5::text, $6::timestamptz, $7::timestamptz,
                                 $4::int, $8::text, $9::text)`;

export interface DiscardRequest extends EventSelection {
  readonly statuses: readonly ('parked' | 'dead')[];
  /** Most events settled in one run (one transaction). */
  readonly limit: number;
  readonly reason: string;
  readonly actor: string;
  readonly dryRun?: boolean | undefined;
}

export type DiscardCandidate = SelectedEvent;

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

function filtersOf(request: DiscardRequest): Record<string, unknown> {
  return { ...selectionFilters(request), limit: request.limit };
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
    const candidates = (
      await pool.query<DiscardCandidate>(PREVIEW_SELECTED, selectionParams(request, request.limit))
    ).rows;
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
      ...selectionParams(request, request.limit),
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
