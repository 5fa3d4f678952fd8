import type pg from 'pg';
import { recordAction } from '../audit/audit.ts';
import type { Config } from '../config/schema.ts';
import type { Queryable } from '../db/pool.ts';
import { withTransaction } from '../db/transaction.ts';
import { identityProblem } from '../inbox/identity-checks.ts';
import { createProvider } from '../providers/index.ts';
import { decodeVerifiedBody } from '../providers/parse-body.ts';

// The operator actions on hookgate.quarantine (list, show, release, drop): one function each,
// which the CLI calls now and the console will call. With ./store.ts the table's only SQL.

export interface QuarantinedRow {
  readonly id: string;
  readonly endpoint: string;
  readonly received_at: Date;
  readonly reason: string;
  readonly message: string;
  readonly body_bytes: number;
  readonly released_at: Date | null;
  readonly dropped_at: Date | null;
  readonly settled_by: string | null;
  readonly settle_reason: string | null;
}

const COLUMNS = `id::text AS id, endpoint, received_at, reason, message, length(body) AS body_bytes,
  released_at, dropped_at, settled_by, settle_reason`;

const LIST = `
  SELECT ${COLUMNS} FROM hookgate.quarantine
   WHERE ($1::text IS NULL OR endpoint = $1)
     AND ($2::boolean OR (released_at IS NULL AND dropped_at IS NULL))
   -- The bigint column, not the output's text alias (which sorts 9 after 10).
   ORDER BY received_at DESC, quarantine.id DESC
   LIMIT $3`;

/** Held rows (or every row with `all`), newest first. */
export async function listQuarantined(
  db: Queryable,
  options: { readonly endpoint?: string | undefined; readonly all?: boolean; readonly limit?: number },
): Promise<QuarantinedRow[]> {
  return (
    await db.query<QuarantinedRow>(LIST, [
      options.endpoint ?? null,
      options.all === true,
      options.limit ?? 100,
    ])
  ).rows;
}

/**
 * Held rows newest first, one keyset page (the console's list): through a partial index on held
 * rows only (quarantine_held_idx or quarantine_held_reason_idx), so a page reads the held set (bounded by the operators), never
 * the released and dropped history. The reason filter applies to the rows that index yields.
 */
const HELD_PAGE = `
  SELECT ${COLUMNS}, to_char(received_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') AS received_key FROM hookgate.quarantine
   WHERE released_at IS NULL AND dropped_at IS NULL
     AND ($1::text IS NULL OR endpoint = $1)
     AND ($2::text IS NULL OR reason = $2)
     AND ($3::timestamptz IS NULL OR (received_at, quarantine.id) < ($3, $4::bigint))
   -- quarantine.id, the bigint: a bare id would be the text output column and sort 9 after 10.
   ORDER BY received_at DESC, quarantine.id DESC
   LIMIT $5`;

export interface HeldPageQuery {
  readonly endpoint?: string | undefined;
  readonly reason?: string | undefined;
  readonly before?: { readonly receivedAt: string; readonly id: string } | undefined;
  readonly limit: number;
}

/** `received_key`: received_at to the microsecond, the keyset cursor's time. */
export async function listHeldPage(
  db: Queryable,
  query: HeldPageQuery,
): Promise<Array<QuarantinedRow & { readonly received_key: string }>> {
  return (
    await db.query<QuarantinedRow & { received_key: string }>(HELD_PAGE, [
      query.endpoint ?? null,
      query.reason ?? null,
      query.before?.receivedAt ?? null,
      query.before?.id ?? null,
      query.limit,
    ])
  ).rows;
}

const COUNT_HELD = `
  SELECT endpoint, count(*)::int AS held FROM hookgate.quarantine
   WHERE released_at IS NULL AND dropped_at IS NULL
   GROUP BY endpoint`;

/** Held rows per endpoint (the console's overview), from the partial index. */
export async function countHeld(db: Queryable): Promise<Record<string, number>> {
  const rows = (await db.query<{ endpoint: string; held: number }>(COUNT_HELD)).rows;
  return Object.fromEntries(rows.map((row) => [row.endpoint, row.held]));
}

export interface QuarantinedDelivery extends QuarantinedRow {
  readonly body: Buffer;
  readonly headers: Record<string, string>;
}

const SHOW = `SELECT ${COLUMNS}, body, headers FROM hookgate.quarantine WHERE id = ANY($1::bigint[]) ORDER BY quarantine.id`;

/** The rows with these ids, body and kept headers included. */
export async function showQuarantined(db: Queryable, ids: readonly string[]): Promise<QuarantinedDelivery[]> {
  return (await db.query<QuarantinedDelivery>(SHOW, [ids])).rows;
}

const HELD = ' AND released_at IS NULL AND dropped_at IS NULL';

const MARK_STILL_UNUSABLE = `
  UPDATE hookgate.quarantine AS q SET reason = u.reason, message = left(u.message, 1000)
    FROM unnest($1::bigint[], $2::text[], $3::text[]) AS u(id, reason, message)
   WHERE q.id = u.id${HELD.replaceAll(' released_at', ' q.released_at').replaceAll(' dropped_at', ' q.dropped_at')}`;

/**
 * One held row claimed and marked released in one transaction (the baseline migration's SECURITY
 * DEFINER function): the row is locked first, so a drop of it waits and then finds it released, or this
 * finds it dropped. The identity is what the provider made of the held delivery here; the payload
 * is the held body, parsed by the function itself (as JSON, or as a form post when the provider
 * decodes one), so a caller cannot put anything else into the inbox.
 */
const RELEASE = `
  SELECT outcome, endpoint, settled_at, settled_by
    FROM hookgate.release_quarantined_searchable($1::bigint, $2::text, $3::text, $4::text, $5::text, $6::text, $7::bigint,
                                      $8::jsonb, $9::boolean, $10::boolean, $11::text, $12::text,
                                      $13::boolean)`;

interface ReleaseRow {
  readonly outcome: 'accepted' | 'duplicate' | 'released' | 'dropped' | 'unknown';
  readonly endpoint: string | null;
  readonly settled_at: Date | null;
  readonly settled_by: string | null;
}

export interface ReleaseOutcome {
  readonly id: string;
  /** `accepted` or `duplicate` (now in the inbox), `still_unusable` (stays held), `not_held`. */
  readonly outcome: 'accepted' | 'duplicate' | 'still_unusable' | 'not_held';
  readonly eventId?: string;
  /** Why it stays held (a refusal code and its sentence), or why it is not held (`not_found`, `quarantine_settled`). */
  readonly reason?: string;
  readonly message?: string;
}

/** Why a row is not held: who settled it and when, as a sentence ending with what did not happen. */
function settledSentence(
  id: string,
  how: 'released' | 'dropped',
  at: Date | null,
  by: string | null,
  nothing: string,
): string {
  return `Quarantined delivery ${id} was ${how}${by ? ` by ${by}` : ''}${at ? ` at ${at.toISOString()}` : ''}: ${nothing}.`;
}

function notHeld(
  id: string,
  row?: Pick<QuarantinedRow, 'released_at' | 'dropped_at' | 'settled_by'>,
): ReleaseOutcome {
  if (!row) {
    return {
      id,
      outcome: 'not_held',
      reason: 'not_found',
      message: `No quarantined delivery has id ${id}: nothing was released.`,
    };
  }
  return {
    id,
    outcome: 'not_held',
    reason: 'quarantine_settled',
    message: settledSentence(
      id,
      row.released_at ? 'released' : 'dropped',
      row.released_at ?? row.dropped_at,
      row.settled_by,
      'nothing was released',
    ),
  };
}

/** PostgreSQL refused the held body as the inbox's payload (a \u0000 in JSON, a body that is not UTF-8). */
function isDataError(error: unknown): error is Error & { code: string } {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === 'string' && (code.startsWith('22') || code.startsWith('54'));
}

/**
 * Runs held deliveries through the endpoint's provider with the current config (an `extract`
 * pointer added since, say): the ones that now identify are claimed into the inbox (and applied
 * like any delivery) and marked released, in one transaction each (RELEASE); the others stay held
 * with the reason they fail for now. Not verified again: they were verified on arrival, and their
 * signatures' timestamps are long past tolerance. A row released or dropped meanwhile (by another
 * operator, at the same moment) is `not_held` with who settled it and when.
 */
export async function releaseQuarantined(
  pool: pg.Pool,
  config: Config,
  request: { readonly ids: readonly string[]; readonly actor: string; readonly reason?: string | undefined },
): Promise<ReleaseOutcome[]> {
  const rows = await showQuarantined(pool, request.ids);
  const outcomes: ReleaseOutcome[] = [];
  const found = new Set(rows.map((row) => row.id));
  for (const id of request.ids) if (!found.has(id)) outcomes.push(notHeld(id));
  const unusable: ReleaseOutcome[] = [];
  for (const row of rows) {
    if (row.released_at || row.dropped_at) {
      outcomes.push(notHeld(row.id, row));
      continue;
    }
    const endpoint = config.endpoints[row.endpoint];
    if (!endpoint) {
      unusable.push({
        id: row.id,
        outcome: 'still_unusable',
        reason: 'endpoint_unknown',
        message: `The config has no endpoint ${row.endpoint}.`,
      });
      continue;
    }
    const provider = createProvider(endpoint);
    const decoded = decodeVerifiedBody(provider, row.body);
    if (!decoded) {
      unusable.push({
        id: row.id,
        outcome: 'still_unusable',
        reason: 'body_not_json',
        message: 'The body is not UTF-8 JSON.',
      });
      continue;
    }
    const identity = provider.identify({
      headers: row.headers,
      body: decoded.body,
      rawBody: row.body,
      secrets: endpoint.secrets,
    });
    if (!identity.ok || 'reply' in identity) {
      unusable.push({
        id: row.id,
        outcome: 'still_unusable',
        reason: identity.ok ? 'replied' : identity.code,
        message: identity.ok ? 'The delivery is a handshake, not an event.' : identity.message,
      });
      continue;
    }
    const problem = identityProblem(identity.event);
    if (problem) {
      unusable.push({
        id: row.id,
        outcome: 'still_unusable',
        reason: problem.code,
        message: problem.message,
      });
      continue;
    }
    const event = identity.event;
    let released: ReleaseRow;
    try {
      released = (
        await pool.query<ReleaseRow>(RELEASE, [
          row.id,
          provider.name,
          event.eventId,
          event.eventType,
          event.entityType,
          event.entityId,
          event.entityVersion,
          JSON.stringify(event.headers),
          event.idUnsigned === true,
          provider.decodeBody !== undefined,
          request.actor,
          request.reason ?? null,
          endpoint.payloadSearch,
        ])
      ).rows[0]!;
    } catch (error) {
      if (!isDataError(error)) throw error;
      unusable.push({
        id: row.id,
        outcome: 'still_unusable',
        reason: 'payload_unstorable',
        message: `PostgreSQL cannot store this payload: ${error.message}.`,
      });
      continue;
    }
    if (released.outcome === 'accepted' || released.outcome === 'duplicate') {
      outcomes.push({ id: row.id, outcome: released.outcome, eventId: event.eventId });
    } else if (released.outcome === 'unknown') {
      outcomes.push(notHeld(row.id));
    } else {
      outcomes.push({
        id: row.id,
        outcome: 'not_held',
        reason: 'quarantine_settled',
        message: settledSentence(
          row.id,
          released.outcome,
          released.settled_at,
          released.settled_by,
          'nothing was released',
        ),
      });
    }
  }
  if (unusable.length > 0)
    await pool.query(MARK_STILL_UNUSABLE, [
      unusable.map((u) => u.id),
      unusable.map((u) => u.reason),
      unusable.map((u) => u.message),
    ]);
  outcomes.push(...unusable);
  const released = outcomes.filter((o) => o.outcome === 'accepted' || o.outcome === 'duplicate');
  await recordAction(pool, {
    actor: request.actor,
    command: 'quarantine release',
    endpoint: new Set(rows.map((row) => row.endpoint)).size === 1 ? rows[0]?.endpoint : undefined,
    filters: { ids: request.ids },
    count: released.length,
    dryRun: false,
    eventIds: released.flatMap((o) => (o.eventId ? [o.eventId] : [])),
    reason: request.reason,
  });
  return outcomes;
}

/**
 * Each held row among the ids marked dropped (the baseline migration's function, which locks the rows in
 * id order: a release holding one is waited for, and then found to have released it).
 */
const DROP = `
  SELECT id::text AS id, endpoint, outcome, settled_at, settled_by
    FROM hookgate.drop_quarantined($1::bigint[], $2::text, $3::text)`;

export interface DropResult {
  /** The rows this call dropped. */
  readonly dropped: string[];
  /** The ids it did not drop, each with why: no such row, or settled already (by whom, when). */
  readonly notDropped: ReadonlyArray<{
    readonly id: string;
    readonly code: 'not_found' | 'quarantine_settled';
    readonly message: string;
  }>;
}

/** Gives up held deliveries for good (kept, marked dropped, with who and why); audited. */
export async function dropQuarantined(
  pool: pg.Pool,
  request: { readonly ids: readonly string[]; readonly actor: string; readonly reason: string },
): Promise<DropResult> {
  return withTransaction(pool, async (client) => {
    const rows = (
      await client.query<{
        id: string;
        endpoint: string;
        outcome: 'dropped_now' | 'released' | 'dropped';
        settled_at: Date | null;
        settled_by: string | null;
      }>(DROP, [request.ids, request.actor, request.reason])
    ).rows;
    const dropped = rows.filter((row) => row.outcome === 'dropped_now');
    const seen = new Set(rows.map((row) => row.id));
    const notDropped: DropResult['notDropped'][number][] = [
      ...rows.flatMap((row) =>
        row.outcome === 'dropped_now'
          ? []
          : [
              {
                id: row.id,
                code: 'quarantine_settled' as const,
                message: settledSentence(
                  row.id,
                  row.outcome,
                  row.settled_at,
                  row.settled_by,
                  'nothing was dropped',
                ),
              },
            ],
      ),
      ...[...new Set(request.ids)]
        .filter((id) => !seen.has(id))
        .map((id) => ({
          id,
          code: 'not_found' as const,
          message: `No quarantined delivery has id ${id}: nothing was dropped.`,
        })),
    ];
    await recordAction(client, {
      actor: request.actor,
      command: 'quarantine drop',
      endpoint: new Set(dropped.map((row) => row.endpoint)).size === 1 ? dropped[0]?.endpoint : undefined,
      filters: { ids: request.ids },
      count: dropped.length,
      dryRun: false,
      reason: request.reason,
    });
    return { dropped: dropped.map((row) => row.id), notDropped };
  });
}
