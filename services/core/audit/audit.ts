import type pg from 'pg';
import { type PruneCounts, type PruneOptions, pruneInBatches } from '../db/batched-delete.ts';
import type { Queryable } from '../db/pool.ts';

// The operators' audit trail (hookgate.audit, migrations/0013_operations.sql): every action an
// operator takes (AUDITED_COMMANDS), dry runs included, with who, when, what it was asked for and how much it changed. The one
// owner of the table's SQL; batch-first, so a caller recording several actions pays one statement.

/** Most event ids one row keeps (the table's CHECK); `count` says how many the action touched. */
export const AUDIT_EVENT_IDS_KEPT = 1000;

/** Every command the audit trail records, as its `command` column spells it. */
export const AUDITED_COMMANDS = [
  'requeue',
  'discard',
  'pause',
  'resume',
  'replay',
  'reconcile',
  // A run queued through the management API (the workers record the run itself as `reconcile`).
  'reconcile start',
  'prune',
  'redeliver',
  'destination pause',
  'destination resume',
  'quarantine release',
  'quarantine drop',
] as const;

export type AuditedCommand = (typeof AUDITED_COMMANDS)[number];

/** One operator action, as its caller reports it. */
export interface AuditEntry {
  /** Who: `--actor`, HOOKGATE_ACTOR, else the OS user (CLI); `console:<user>` (console); `api:<token>` (API). */
  readonly actor: string;
  /** The command's name: one of AUDITED_COMMANDS. */
  readonly command: AuditedCommand;
  readonly endpoint?: string | undefined;
  /** What it was asked for (statuses, ids, times, windows), as given. */
  readonly filters: Readonly<Record<string, unknown>>;
  /** How many things it changed (or, in a dry run, would change). */
  readonly count: number;
  readonly dryRun: boolean;
  /** The events it touched (the first AUDIT_EVENT_IDS_KEPT are kept). */
  readonly eventIds?: readonly string[] | undefined;
  readonly reason?: string | undefined;
}

const RECORD_ACTIONS = `
  INSERT INTO hookgate.audit (actor, command, endpoint, filters, count, dry_run, reason, event_ids)
  SELECT a.actor, a.command, a.endpoint, a.filters, a.count, a.dry_run, a.reason,
         -- text[][] cannot be unnested per row: the ids travel as one JSON array per action.
         ARRAY(SELECT jsonb_array_elements_text(a.event_ids))
    FROM unnest($1::text[], $2::text[], $3::text[], $4::jsonb[], $5::bigint[], $6::boolean[], $7::text[], $8::jsonb[])
      AS a(actor, command, endpoint, filters, count, dry_run, reason, event_ids)
  RETURNING id::text AS id`;

/** Records several actions in one statement; returns their ids in order. */
export async function recordActions(db: Queryable, entries: readonly AuditEntry[]): Promise<string[]> {
  if (entries.length === 0) return [];
  const result = await db.query<{ id: string }>(RECORD_ACTIONS, [
    entries.map((entry) => entry.actor.slice(0, 200)),
    entries.map((entry) => entry.command),
    entries.map((entry) => entry.endpoint ?? null),
    entries.map((entry) => JSON.stringify(entry.filters)),
    entries.map((entry) => entry.count),
    entries.map((entry) => entry.dryRun),
    entries.map((entry) => (entry.reason === undefined ? null : entry.reason.slice(0, 1000))),
    entries.map((entry) => JSON.stringify((entry.eventIds ?? []).slice(0, AUDIT_EVENT_IDS_KEPT))),
  ]);
  return result.rows.map((row) => row.id);
}

/** Records one action (in the caller's transaction when `db` is one); returns its id. */
export async function recordAction(db: Queryable, entry: AuditEntry): Promise<string> {
  const [id] = await recordActions(db, [entry]);
  return id!;
}

export interface AuditRow {
  readonly id: string;
  readonly at: Date;
  readonly actor: string;
  readonly command: string;
  readonly endpoint: string | null;
  readonly filters: Record<string, unknown>;
  readonly count: number;
  readonly dry_run: boolean;
  readonly reason: string | null;
  readonly event_ids: string[];
  /** `at` to the microsecond (a Date keeps milliseconds): the keyset cursor's time. listActions only. */
  readonly at_key?: string;
}

const COLUMNS = `id::text AS id, at, actor, command, endpoint, filters, count::float8 AS count, dry_run, reason, event_ids`;

/** Newest first, through audit_at_idx or audit_endpoint_at_idx. NULL filters mean "any". */
const LIST_ACTIONS = `
  SELECT ${COLUMNS}, to_char(at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') AS at_key
    FROM hookgate.audit
   WHERE ($1::timestamptz IS NULL OR at >= $1)
     AND ($2::text IS NULL OR endpoint = $2)
     AND ($3::text IS NULL OR command = $3)
     AND ($5::text IS NULL OR actor = $5)
     AND ($6::timestamptz IS NULL OR (at, audit.id) < ($6, $7::bigint))
   -- audit.id, the bigint: a bare id would be the text output column and sort 9 after 10.
   ORDER BY at DESC, audit.id DESC
   LIMIT $4`;

export interface AuditQuery {
  readonly since?: Date | undefined;
  readonly endpoint?: string | undefined;
  readonly command?: string | undefined;
  readonly actor?: string | undefined;
  /** Keyset: only actions older than this one (the console's next page). */
  readonly before?: { readonly at: string; readonly id: string } | undefined;
  readonly limit: number;
}

export async function listActions(db: Queryable, query: AuditQuery): Promise<AuditRow[]> {
  return (
    await db.query<AuditRow>(LIST_ACTIONS, [
      query.since ?? null,
      query.endpoint ?? null,
      query.command ?? null,
      query.limit,
      query.actor ?? null,
      query.before?.at ?? null,
      query.before?.id ?? null,
    ])
  ).rows;
}

/** The actions that named this event (real runs only), oldest first: audit_event_ids_idx. */
const ACTIONS_ON_EVENT = `
  SELECT ${COLUMNS}
    FROM hookgate.audit
   WHERE event_ids @> ARRAY[$2::text] AND endpoint = $1 AND NOT dry_run
   ORDER BY at, id
   LIMIT 100`;

export async function actionsOnEvent(db: Queryable, endpoint: string, eventId: string): Promise<AuditRow[]> {
  return (await db.query<AuditRow>(ACTIONS_ON_EVENT, [endpoint, eventId])).rows;
}

/** Retention's batch (batched-delete.ts's cursor walk), through audit_at_idx. */
const PRUNE_AUDIT_BATCH = `
  WITH gone AS (
    DELETE FROM hookgate.audit
     WHERE ctid = ANY (ARRAY(
             SELECT ctid FROM hookgate.audit
              WHERE at >= $1::timestamptz AND at < $2::timestamptz
              ORDER BY at
              LIMIT $3))
    RETURNING at
  )
  SELECT count(*)::int AS deleted, max(at)::text AS last FROM gone`;

const COUNT_PRUNABLE_AUDIT = `SELECT count(*)::int AS rows FROM hookgate.audit WHERE at < $1::timestamptz`;

/** Deletes audit rows older than the window (`hookgate prune --audit-older-than`). */
export function pruneAudit(db: pg.Pool, options: PruneOptions): Promise<PruneCounts> {
  return pruneInBatches(db, 'audit', { batch: PRUNE_AUDIT_BATCH, count: COUNT_PRUNABLE_AUDIT }, options);
}
