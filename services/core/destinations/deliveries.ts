import type pg from 'pg';
import { type PruneCounts, type PruneOptions, pruneInBatches } from '../db/batched-delete.ts';
import { RAW_OF_DELIVERY } from '../inbox/raw-bodies.ts';

// Every statement on hookgate.destination_deliveries and hookgate.destination_attempts
// The delivery row is the relay's truth: the apply engine writes it in the
// apply's transaction, the relay claims due rows and records each attempt (and ends those of
// destinations the configuration no longer has), the operators' actions (actions.ts) hold,
// release and redeliver rows, and prune deletes delivered ones. The reports' reads are in
// services/core/read-models/destinations-sql.ts.

type Queryable = Pick<pg.Pool | pg.PoolClient, 'query'>;

/** A delivery the apply engine writes: one event to one destination. */
export interface NewDelivery {
  readonly destination: string;
  readonly eventId: string;
  readonly eventType: string;
  readonly webhookId: string;
  /** `[entity type, entity id]` as JSON (null: the event has no entity). */
  readonly entityKey: string | null;
  readonly entityVersion: string | null;
}

/**
 * One row per (event, destination), `held` if the destination is paused. An event already
 * delivered there (its inbox row pruned and the event received again) keeps its row: a receiver
 * is not sent a delivered event twice by the fan-out itself.
 */
const INSERT_DELIVERIES = `
  INSERT INTO hookgate.destination_deliveries AS d
    (endpoint, destination, event_id, event_type, webhook_id, status, entity_key, entity_version)
  SELECT $1, x.destination, x.event_id, x.event_type, x.webhook_id,
         CASE WHEN s.paused THEN 'held' ELSE 'pending' END, x.entity_key, x.entity_version
    FROM unnest($2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::bigint[])
           AS x(destination, event_id, event_type, webhook_id, entity_key, entity_version)
    LEFT JOIN hookgate.destination_state s
      ON s.endpoint = $1 AND s.destination = x.destination AND s.paused
  ON CONFLICT (endpoint, event_id, destination) DO NOTHING`;

export async function insertDeliveries(
  tx: Queryable,
  endpoint: string,
  deliveries: readonly NewDelivery[],
): Promise<void> {
  if (deliveries.length === 0) return;
  await tx.query(INSERT_DELIVERIES, [
    endpoint,
    deliveries.map((d) => d.destination),
    deliveries.map((d) => d.eventId),
    deliveries.map((d) => d.eventType),
    deliveries.map((d) => d.webhookId),
    deliveries.map((d) => d.entityKey),
    deliveries.map((d) => d.entityVersion),
  ]);
}

/**
 * The time a statement works at: the caller's (`$n`, a test's driven clock) or, when it passes
 * none (production), the database's.
 */
const nowAt = (n: number) => `coalesce($${n}::timestamptz, now())`;

/** What an attempt whose result was never recorded says (its record is written by the next claim). */
const UNRECORDED_ERROR =
  'no result was recorded for this attempt: its lease ran out first (its worker stopped, or the record could not be written)';
const SPENT_ERROR =
  'its retries are spent: the last attempt allowed was sent but its result was never recorded (its lease ran out)';

/**
 * Takes up to $3 due deliveries of one destination and leases them for one attempt each ($4
 * seconds): rows whose next attempt is due, and rows whose last attempt's lease ran out (its
 * worker died or its record could not be written; sent again with the same webhook-id). The
 * attempt is counted here, when it is claimed, not when its result is recorded: a row whose
 * attempts already reached $5 (the first attempt and `retry.limit` retries) is not sent again
 * but ends `dead`, so a delivery is never sent more often than its retry limit allows, however
 * its records fare. An attempt whose lease ran out gets its record here (`unrecorded`), so
 * every attempt made is visible. None while the destination is paused. `inbox_row` is
 * the event's stored payload as text and its trace context, read in one look-up (null if the inbox
 * row was pruned meanwhile). $6: now.
 */
const CLAIM_DUE = `
  WITH due AS (
    SELECT id, status, attempts, last_attempt_at, lease_until,
           attempts - redelivered_attempts >= $5 AS spent
      FROM hookgate.destination_deliveries
     WHERE endpoint = $1 AND destination = $2
       AND status IN ('pending', 'retrying', 'sending')
       AND next_attempt_at <= ${nowAt(6)}
       AND (status <> 'sending' OR lease_until < ${nowAt(6)})
       AND NOT EXISTS (SELECT 1 FROM hookgate.destination_state s
                        WHERE s.endpoint = $1 AND s.destination = $2 AND s.paused)
       /*ORDERED*/
     ORDER BY next_attempt_at, id
     LIMIT $3
     FOR UPDATE SKIP LOCKED
  ), unrecorded AS (
    INSERT INTO hookgate.destination_attempts
      (delivery_id, attempt, started_at, duration_ms, http_status, error, unrecorded)
    SELECT id, attempts, coalesce(last_attempt_at, lease_until, ${nowAt(6)}),
           coalesce(greatest(0, round(extract(epoch FROM lease_until - last_attempt_at) * 1000)), 0)::int,
           NULL, '${UNRECORDED_ERROR}', true
      FROM due WHERE status = 'sending' AND attempts > 0
    ON CONFLICT (delivery_id, attempt) DO NOTHING
  ), spent AS (
    UPDATE hookgate.destination_deliveries d
       SET status = 'dead', lease_until = NULL, settled_at = ${nowAt(6)},
           last_error = CASE WHEN due.status = 'sending' THEN '${SPENT_ERROR}'
                             ELSE coalesce(d.last_error, 'its retries are spent') END
      FROM due
     WHERE d.id = due.id AND due.spent
    RETURNING d.id::text AS id, d.event_id, d.event_type, d.webhook_id, d.attempts, d.redelivered_attempts,
              d.entity_key
  ), sent AS (
    UPDATE hookgate.destination_deliveries d
       SET status = 'sending',
           attempts = d.attempts + 1,
           lease_until = ${nowAt(6)} + make_interval(secs => $4::double precision),
           last_attempt_at = ${nowAt(6)}
      FROM due
     WHERE d.id = due.id AND NOT due.spent
    RETURNING d.id::text AS id, d.event_id, d.event_type, d.webhook_id, d.attempts,
              d.redelivered_attempts, d.entity_key,
              (SELECT ARRAY[i.payload::text, i.traceparent] FROM hookgate.inbox i
                WHERE i.endpoint = d.endpoint AND i.event_id = d.event_id) AS inbox_row/*RAW*/
  )
  SELECT false AS spent, sent.* FROM sent
  UNION ALL
  SELECT true, spent.*, NULL/*RAW_NULLS*/ FROM spent`;

/**
 * `ordering: entity`: only an entity's head may go, the first of its unsettled deliveries in
 * version order (then arrival); one in flight (`sending`) or waiting to retry blocks the rest of
 * its entity, and nothing else. A `dead` or `delivered` one no longer blocks.
 */
const ENTITY_HEAD = `
       AND (entity_key IS NULL OR NOT EXISTS (
             SELECT 1 FROM hookgate.destination_deliveries p
              WHERE p.endpoint = $1 AND p.destination = $2
                AND p.entity_key = destination_deliveries.entity_key
                AND p.status IN ('pending', 'sending', 'retrying', 'held')
                AND (coalesce(p.entity_version, 0), p.id)
                    < (coalesce(destination_deliveries.entity_version, 0), destination_deliveries.id)))`;

/** The four claims: entity-ordered or not, and with the original bytes (`body: raw`) or not. */
const claimStatement = (ordered: boolean, raw: boolean): string =>
  CLAIM_DUE.replace('/*ORDERED*/', ordered ? ENTITY_HEAD : '')
    .replace('/*RAW*/', raw ? `,${RAW_OF_DELIVERY}` : '')
    .replace('/*RAW_NULLS*/', raw ? ', NULL, NULL' : '');
const CLAIMS = {
  plain: claimStatement(false, false),
  ordered: claimStatement(true, false),
  raw: claimStatement(false, true),
  orderedRaw: claimStatement(true, true),
};

export interface ClaimedDelivery {
  readonly id: string;
  readonly event_id: string;
  readonly event_type: string;
  readonly webhook_id: string;
  /** This attempt's number (its fence for finishAttempt). */
  readonly attempts: number;
  readonly redelivered_attempts: number;
  /** `[entity type, entity id]` as JSON text; null: the event has no entity. */
  readonly entity_key: string | null;
  readonly body: string | null;
  /** The event's trace context, as its inbox row keeps it (the claim span's). */
  readonly traceparent: string | null;
  /** With `raw`: the provider's original bytes and kept headers (null: none were kept). */
  readonly raw_body?: Buffer | null;
  readonly raw_headers?: Record<string, string> | null;
}

/** What a claim took: deliveries to send, and deliveries it ended `dead` (retries spent, not sent). */
export interface Claimed {
  readonly toSend: ClaimedDelivery[];
  readonly spent: ClaimedDelivery[];
}

export interface ClaimRequest {
  readonly endpoint: string;
  readonly destination: string;
  readonly limit: number;
  readonly leaseSeconds: number;
  /** Attempts a delivery may have in its budget: the first and `retry.limit` retries. */
  readonly maxAttempts: number;
  readonly ordered?: boolean;
  readonly raw?: boolean;
  /** The statement's now; null: the database's clock. */
  readonly now?: Date | null;
}

export async function claimDue(db: Queryable, request: ClaimRequest): Promise<Claimed> {
  const statement = request.ordered
    ? request.raw
      ? CLAIMS.orderedRaw
      : CLAIMS.ordered
    : request.raw
      ? CLAIMS.raw
      : CLAIMS.plain;
  const { rows } = await db.query<
    Omit<ClaimedDelivery, 'body' | 'traceparent'> & {
      spent: boolean;
      inbox_row: [string, string | null] | null;
    }
  >(statement, [
    request.endpoint,
    request.destination,
    request.limit,
    request.leaseSeconds,
    request.maxAttempts,
    request.now ?? null,
  ]);
  const toSend: ClaimedDelivery[] = [];
  const spent: ClaimedDelivery[] = [];
  for (const { spent: isSpent, inbox_row: inbox, ...row } of rows) {
    const claimed = { ...row, body: inbox?.[0] ?? null, traceparent: inbox?.[1] ?? null };
    (isSpent ? spent : toSend).push(claimed);
  }
  return { toSend, spent };
}

/**
 * Ends attempts, several in one statement (the relay's finishes are group-committed): each
 * row's new status, fenced by its attempt's number, so an attempt that outlived its lease
 * changes nothing, except a 2xx, which did happen downstream; and each attempt's own record,
 * kept either way (replacing the `unrecorded` one a later claim wrote for it). Returns the ids
 * whose row was written. Every text was made storable by the caller (answer.ts); the answer's
 * bytes are bytea. $12: now.
 */
const FINISH_ATTEMPTS = `
  WITH input AS (
    SELECT * FROM unnest($1::bigint[], $2::int[], $3::text[], $4::int[], $5::text[],
                         $6::double precision[], $7::timestamptz[], $8::int[], $9::text[],
                         $10::bytea[], $11::text[])
      AS x(id, attempt, status, http_status, error, retry_in, started_at, duration_ms, head,
           bytes, headers)
  ), done AS (
    UPDATE hookgate.destination_deliveries d
       SET status = x.status,
           http_status = x.http_status,
           last_error = x.error,
           lease_until = NULL,
           next_attempt_at = CASE WHEN x.status = 'retrying'
                                  THEN ${nowAt(12)} + make_interval(secs => x.retry_in)
                                  ELSE d.next_attempt_at END,
           settled_at = CASE WHEN x.status IN ('delivered', 'dead') THEN ${nowAt(12)} END
      FROM input x
     WHERE d.id = x.id
       AND ((d.status = 'sending' AND d.attempts = x.attempt)
            OR (x.status = 'delivered' AND d.status <> 'delivered'))
    RETURNING d.id
  ), kept AS (
    INSERT INTO hookgate.destination_attempts AS a
      (delivery_id, attempt, started_at, duration_ms, http_status, error, response_head,
       response_bytes, response_headers)
    SELECT id, attempt, started_at, duration_ms, http_status, error, head, bytes, headers FROM input
    ON CONFLICT (delivery_id, attempt) DO UPDATE
      SET started_at = EXCLUDED.started_at, duration_ms = EXCLUDED.duration_ms,
          http_status = EXCLUDED.http_status, error = EXCLUDED.error,
          response_head = EXCLUDED.response_head, response_bytes = EXCLUDED.response_bytes,
          response_headers = EXCLUDED.response_headers, unrecorded = false
      WHERE a.unrecorded
  )
  SELECT id::text AS id FROM done`;

export interface AttemptOutcome {
  readonly status: 'delivered' | 'retrying' | 'dead';
  readonly httpStatus: number | null;
  /** Storable (escaped, bounded) and redacted. */
  readonly error: string | null;
  /** For `retrying`: how long until the next attempt. */
  readonly retryInSeconds: number;
  readonly startedAt: Date;
  readonly durationMs: number;
  /** The answer's first bytes as readable text (storable), its bytes, and its headers (storable). */
  readonly responseHead: string | null;
  readonly responseBytes: Buffer | null;
  readonly responseHeaders: string | null;
}

export interface FinishedAttempt extends AttemptOutcome {
  readonly id: string;
  readonly attempt: number;
}

/**
 * Records attempts (at most one per delivery id); returns the ids whose row was written. `now`:
 * the statement's clock (null: the database's).
 */
export async function finishAttempts(
  db: Queryable,
  attempts: readonly FinishedAttempt[],
  now: Date | null = null,
): Promise<Set<string>> {
  if (attempts.length === 0) return new Set();
  const { rows } = await db.query<{ id: string }>(FINISH_ATTEMPTS, [
    attempts.map((a) => a.id),
    attempts.map((a) => a.attempt),
    attempts.map((a) => a.status),
    attempts.map((a) => a.httpStatus),
    attempts.map((a) => a.error),
    attempts.map((a) => a.retryInSeconds),
    attempts.map((a) => a.startedAt),
    attempts.map((a) => Math.round(a.durationMs)),
    attempts.map((a) => a.responseHead),
    attempts.map((a) => a.responseBytes),
    attempts.map((a) => a.responseHeaders),
    now,
  ]);
  return new Set(rows.map((row) => row.id));
}

/**
 * Ends, `dead` at once, the unsettled deliveries whose (endpoint, destination) is not among the
 * configured pairs ($1, $2): no loop claims them, and nothing about where to send them is taken
 * from the row. Rows in flight under a live lease are left to the attempt that holds them (a
 * worker whose configuration has that destination). Each subquery's status test implies a
 * partial index's (due_idx, stuck_idx), so this reads the backlog, not the table. Redeliver sends them
 * once the destination is configured again.
 */
const END_UNCONFIGURED = `
  WITH configured AS (
    SELECT * FROM unnest($1::text[], $2::text[]) AS c(endpoint, destination)
  ), unconfigured AS (
    SELECT id FROM hookgate.destination_deliveries d
     WHERE d.status IN ('pending', 'retrying', 'sending')
       AND NOT EXISTS (SELECT 1 FROM configured c WHERE c.endpoint = d.endpoint AND c.destination = d.destination)
    UNION ALL
    SELECT id FROM hookgate.destination_deliveries d
     WHERE d.status = 'held'
       AND NOT EXISTS (SELECT 1 FROM configured c WHERE c.endpoint = d.endpoint AND c.destination = d.destination)
  )
  UPDATE hookgate.destination_deliveries d
     SET status = 'dead',
         last_error = format(
           'destination_unconfigured: the configuration has no destination %s on endpoint %s, so nothing was sent; put the destination back and redeliver (hookgate redeliver --destination %s) to send it',
           left(d.destination, 200), left(d.endpoint, 200), left(d.destination, 200)),
         http_status = NULL,
         lease_until = NULL,
         settled_at = $3::timestamptz
    FROM unconfigured u
   WHERE d.id = u.id
     AND d.status IN ('pending', 'retrying', 'sending', 'held')
     AND (d.status <> 'sending' OR d.lease_until < $3::timestamptz)
  RETURNING d.endpoint, d.destination`;

export async function endUnconfiguredDeliveries(
  db: Queryable,
  configured: readonly { readonly endpoint: string; readonly destination: string }[],
  now: Date,
): Promise<Array<{ readonly endpoint: string; readonly destination: string }>> {
  const { rows } = await db.query<{ endpoint: string; destination: string }>(END_UNCONFIGURED, [
    configured.map((pair) => pair.endpoint),
    configured.map((pair) => pair.destination),
    now,
  ]);
  return rows;
}

/** Which settled deliveries of one destination a redelivery takes: these ids, or by status. */
export interface RedeliverySelection {
  readonly endpoint: string;
  readonly destination: string;
  readonly ids: readonly string[] | null;
  readonly statuses: readonly ('dead' | 'delivered')[];
}

const SELECTED = `
  endpoint = $1 AND destination = $2
  AND status = ANY ($4::text[])
  AND ($3::bigint[] IS NULL OR id = ANY ($3::bigint[]))`;

const SELECT_REDELIVERABLE = `SELECT id::text AS id, event_id FROM hookgate.destination_deliveries WHERE ${SELECTED} ORDER BY id`;

/**
 * Sent again as they were (same webhook-id and Idempotency-Key), with a fresh retry budget:
 * `pending`, or `held` while the destination is paused.
 */
const REDELIVER = `
  UPDATE hookgate.destination_deliveries
     SET status = CASE WHEN EXISTS (SELECT 1 FROM hookgate.destination_state s
                                     WHERE s.endpoint = $1 AND s.destination = $2 AND s.paused)
                       THEN 'held' ELSE 'pending' END,
         redelivered_attempts = attempts,
         next_attempt_at = now(),
         settled_at = NULL
   WHERE ${SELECTED}
  RETURNING id::text AS id, event_id`;

export async function redeliverRows(
  db: Queryable,
  selection: RedeliverySelection,
  dryRun: boolean,
): Promise<Array<{ readonly id: string; readonly eventId: string }>> {
  const { rows } = await db.query<{ id: string; event_id: string }>(
    dryRun ? SELECT_REDELIVERABLE : REDELIVER,
    [selection.endpoint, selection.destination, selection.ids, selection.statuses],
  );
  return rows
    .map((row) => ({ id: row.id, eventId: row.event_id }))
    .sort((a, b) => Number(a.id) - Number(b.id));
}

/** A pause holds what waits to be sent (an attempt in flight finishes). */
const HOLD = `
  UPDATE hookgate.destination_deliveries SET status = 'held'
   WHERE endpoint = $1 AND destination = $2 AND status IN ('pending', 'retrying')
  RETURNING 1`;

/**
 * A resume releases them, due when they were due (at once, if that time passed while paused);
 * no attempt was made or counted while held.
 */
const RELEASE = `
  UPDATE hookgate.destination_deliveries
     SET status = CASE WHEN attempts > redelivered_attempts THEN 'retrying' ELSE 'pending' END
   WHERE endpoint = $1 AND destination = $2 AND status = 'held'
  RETURNING 1`;

export async function holdRows(db: Queryable, endpoint: string, destination: string): Promise<number> {
  return (await db.query(HOLD, [endpoint, destination])).rowCount ?? 0;
}

export async function releaseRows(db: Queryable, endpoint: string, destination: string): Promise<number> {
  return (await db.query(RELEASE, [endpoint, destination])).rowCount ?? 0;
}

/**
 * Retention: delivered rows settled before the cutoff (their attempts go with them), in bounded
 * batches from a cursor through destination_deliveries_settled_idx.
 * Dead, held and unsent rows are kept whatever their age.
 */
export const PRUNE_DELIVERIES_BATCH = `
  WITH gone AS (
    DELETE FROM hookgate.destination_deliveries
     WHERE id = ANY (ARRAY(
             SELECT id
               FROM hookgate.destination_deliveries
              WHERE settled_at >= $1::timestamptz AND settled_at < $2::timestamptz
                AND status = 'delivered'
              ORDER BY settled_at
              LIMIT $3))
       -- Redelivered since the batch read it: not settled any more, kept.
       AND status = 'delivered'
    RETURNING settled_at
  )
  SELECT count(*)::int AS deleted, max(settled_at)::text AS last FROM gone`;

const COUNT_PRUNABLE = `
  SELECT count(*)::int AS rows
    FROM hookgate.destination_deliveries
   WHERE settled_at < $1::timestamptz AND status = 'delivered'`;

export function pruneDestinationDeliveries(db: pg.Pool, options: PruneOptions): Promise<PruneCounts> {
  return pruneInBatches(
    db,
    'destination_deliveries',
    { batch: PRUNE_DELIVERIES_BATCH, count: COUNT_PRUNABLE },
    options,
  );
}
