import type pg from 'pg';
import { type PruneCounts, type PruneOptions, pruneInBatches } from '../db/batched-delete.ts';

/**
 * The relay's delivery record (hookgate.outbox_deliveries), one row per (kind, key): every
 * statement on that table. Each autocommits: the record must survive whatever happens to the
 * job afterwards.
 */

/** Which delivery: the effect's outbox kind and idempotency key. */
export interface DeliveryKey {
  readonly kind: string;
  readonly key: string;
}

/**
 * Starts an attempt: creates the record or takes it over, unless it is settled (`delivered`,
 * `nowhere`) or another attempt holds an unexpired lease. Returns a row only when this caller
 * may send.
 */
const BEGIN_ATTEMPT = `
  INSERT INTO hookgate.outbox_deliveries AS d
    (kind, key, endpoint, url, status, attempts, lease_until)
  VALUES ($1, $2, $3, $4, 'sending', 1, now() + make_interval(secs => $5::double precision))
  ON CONFLICT (kind, key) DO UPDATE
    SET status = 'sending',
        attempts = d.attempts + 1,
        url = EXCLUDED.url,
        endpoint = coalesce(EXCLUDED.endpoint, d.endpoint),
        lease_until = EXCLUDED.lease_until,
        last_attempt_at = now(),
        settled_at = NULL
    WHERE d.status NOT IN ('delivered', 'nowhere')
      AND NOT (d.status = 'sending' AND d.lease_until > now())
  RETURNING attempts`;

const DELIVERY_STATUS = `
  SELECT status
    FROM hookgate.outbox_deliveries WHERE kind = $1 AND key = $2`;

/**
 * Ends an attempt with its result; `delivered` and `dead` are settled. Fenced by the attempt
 * number BEGIN_ATTEMPT returned: an attempt that outlived its lease (a stalled process, a
 * starved pool) while another took the record over changes nothing, so it cannot turn
 * `delivered` back into `retrying` and have a later replay send again. A 2xx is the one result
 * that lands whichever attempt saw it: the effect did happen downstream. Returns a row only if
 * the record was written.
 */
const FINISH_ATTEMPT = `
  UPDATE hookgate.outbox_deliveries
     SET status = $3::text,
         http_status = $4,
         last_error = $5,
         lease_until = NULL,
         settled_at = CASE WHEN $3::text IN ('delivered', 'dead') THEN now() END
   WHERE kind = $1 AND key = $2
     AND ((status = 'sending' AND attempts = $6)
          OR ($3::text = 'delivered' AND status NOT IN ('delivered', 'nowhere')))
  RETURNING status`;

/**
 * A message with no URL configured is settled as delivered nowhere (a key already delivered
 * keeps its record, and one that another attempt holds under an unexpired lease is left to it).
 */
const RECORD_NOWHERE = `
  INSERT INTO hookgate.outbox_deliveries AS d
    (kind, key, endpoint, url, status, attempts, settled_at)
  VALUES ($1, $2, $3, NULL, 'nowhere', 0, now())
  ON CONFLICT (kind, key) DO UPDATE
    SET status = 'nowhere', url = NULL, lease_until = NULL, settled_at = now()
    WHERE d.status NOT IN ('delivered', 'nowhere')
      AND NOT (d.status = 'sending' AND d.lease_until > now())
  RETURNING status`;

/**
 * Takes the record's lease for a new attempt. Returns the attempt's number (its fence for
 * finishAttempt), or null when it may not send (already settled, or another attempt's lease).
 */
export async function beginAttempt(
  db: pg.Pool,
  delivery: DeliveryKey & {
    readonly endpoint: string | null;
    readonly url: string;
    readonly leaseSeconds: number;
  },
): Promise<number | null> {
  const begun = await db.query<{ attempts: number }>(BEGIN_ATTEMPT, [
    delivery.kind,
    delivery.key,
    delivery.endpoint,
    delivery.url,
    delivery.leaseSeconds,
  ]);
  return begun.rows[0]?.attempts ?? null;
}

export async function deliveryStatus(db: pg.Pool, delivery: DeliveryKey): Promise<string | null> {
  return (
    (await db.query<{ status: string }>(DELIVERY_STATUS, [delivery.kind, delivery.key])).rows[0]?.status ??
    null
  );
}

export interface AttemptResult {
  readonly status: 'delivered' | 'retrying' | 'dead';
  readonly httpStatus: number | null;
  readonly error: string | null;
}

/** Records how attempt `attempt` ended; false when the record was not written (fenced out). */
export async function finishAttempt(
  db: pg.Pool,
  delivery: DeliveryKey,
  attempt: number,
  result: AttemptResult,
): Promise<boolean> {
  const finished = await db.query(FINISH_ATTEMPT, [
    delivery.kind,
    delivery.key,
    result.status,
    result.httpStatus,
    result.error,
    attempt,
  ]);
  return (finished.rowCount ?? 0) > 0;
}

export async function recordNowhere(
  db: pg.Pool,
  delivery: DeliveryKey & { readonly endpoint: string | null },
): Promise<void> {
  await db.query(RECORD_NOWHERE, [delivery.kind, delivery.key, delivery.endpoint]);
}

/**
 * Retention for the delivery records: those settled as delivered (or with nowhere to deliver)
 * before the cutoff, in bounded batches through outbox_deliveries_settled_idx (migration 0007),
 * from a cursor, as the inbox's prune does (see PRUNE_INBOX_BATCH for why). `dead` records are
 * kept. After this, replaying an event can send its effect again (with the same Idempotency-Key).
 */
export const PRUNE_DELIVERIES_BATCH = `
  WITH gone AS (
    DELETE FROM hookgate.outbox_deliveries
     WHERE ctid = ANY (ARRAY(
             SELECT ctid
               FROM hookgate.outbox_deliveries
              WHERE settled_at >= $1::timestamptz AND settled_at < $2::timestamptz
                AND status IN ('delivered', 'nowhere')
              ORDER BY settled_at
              LIMIT $3))
       -- Taken over by a new attempt since the batch read it: not settled any more, kept.
       AND status IN ('delivered', 'nowhere')
    RETURNING settled_at
  )
  SELECT count(*)::int AS deleted, max(settled_at)::text AS last FROM gone`;

const COUNT_PRUNABLE_DELIVERIES = `
  SELECT count(*)::int AS rows
    FROM hookgate.outbox_deliveries
   WHERE settled_at < $1::timestamptz
     AND status IN ('delivered', 'nowhere')`;

export function pruneDeliveries(db: pg.Pool, options: PruneOptions): Promise<PruneCounts> {
  return pruneInBatches(
    db,
    'outbox_deliveries',
    { batch: PRUNE_DELIVERIES_BATCH, count: COUNT_PRUNABLE_DELIVERIES },
    options,
  );
}
