import type pg from 'pg';

// Every statement on hookgate.destination_deliveries and hookgate.destination_attempts
// (migration 0014). The delivery row is the relay's truth: the apply engine writes it in the
// apply's transaction, the relay claims due rows and records each attempt, and the operators'
// actions (actions.ts) hold, release and redeliver rows.

type Queryable = Pick<pg.Pool | pg.PoolClient, 'query'>;

/** A delivery the apply engine writes: one event to one destination. */
export interface NewDelivery {
  readonly destination: string;
  readonly eventId: string;
  readonly eventType: string;
  readonly webhookId: string;
}

/**
 * One row per (event, destination), `held` if the destination is paused. An event already
 * delivered there (its inbox row pruned and the event received again) keeps its row: a receiver
 * is not sent a delivered event twice by the fan-out itself.
 */
const INSERT_DELIVERIES = `
  INSERT INTO hookgate.destination_deliveries AS d
    (endpoint, destination, event_id, event_type, webhook_id, status)
  SELECT $1, x.destination, x.event_id, x.event_type, x.webhook_id,
         CASE WHEN s.paused THEN 'held' ELSE 'pending' END
    FROM unnest($2::text[], $3::text[], $4::text[], $5::text[])
           AS x(destination, event_id, event_type, webhook_id)
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
  ]);
}

/**
 * Takes up to $3 due deliveries of one destination and leases them for one attempt each: rows
 * whose next attempt is due, and rows whose last attempt's lease ran out (its worker died; sent
 * again with the same webhook-id). None while the destination is paused. The body is the
 * event's stored payload as text (null if the inbox row was pruned meanwhile).
 */
const CLAIM_DUE = `
  WITH due AS (
    SELECT id
      FROM hookgate.destination_deliveries
     WHERE endpoint = $1 AND destination = $2
       AND status IN ('pending', 'retrying', 'sending')
       AND next_attempt_at <= now()
       AND (status <> 'sending' OR lease_until < now())
       AND NOT EXISTS (SELECT 1 FROM hookgate.destination_state s
                        WHERE s.endpoint = $1 AND s.destination = $2 AND s.paused)
     ORDER BY next_attempt_at, id
     LIMIT $3
     FOR UPDATE SKIP LOCKED
  )
  UPDATE hookgate.destination_deliveries d
     SET status = 'sending',
         attempts = d.attempts + 1,
         lease_until = now() + make_interval(secs => $4::double precision),
         last_attempt_at = now()
    FROM due
   WHERE d.id = due.id
  RETURNING d.id::text AS id, d.event_id, d.event_type, d.webhook_id, d.attempts,
            d.redelivered_attempts,
            (SELECT i.payload::text FROM hookgate.inbox i
              WHERE i.endpoint = d.endpoint AND i.event_id = d.event_id) AS body`;

export interface ClaimedDelivery {
  readonly id: string;
  readonly event_id: string;
  readonly event_type: string;
  readonly webhook_id: string;
  /** This attempt's number (its fence for finishAttempt). */
  readonly attempts: number;
  readonly redelivered_attempts: number;
  readonly body: string | null;
}

export async function claimDue(
  db: Queryable,
  request: { endpoint: string; destination: string; limit: number; leaseSeconds: number },
): Promise<ClaimedDelivery[]> {
  const { rows } = await db.query<ClaimedDelivery>(CLAIM_DUE, [
    request.endpoint,
    request.destination,
    request.limit,
    request.leaseSeconds,
  ]);
  return rows;
}

/**
 * Ends an attempt: the row's new status (fenced by the attempt's number, so an attempt that
 * outlived its lease changes nothing, except a 2xx, which did happen downstream) and the
 * attempt's own record, which is kept either way.
 */
const FINISH_ATTEMPT = `
  WITH done AS (
    UPDATE hookgate.destination_deliveries
       SET status = $3::text,
           http_status = $4,
           last_error = $5,
           lease_until = NULL,
           next_attempt_at = CASE WHEN $3::text = 'retrying'
                                  THEN now() + make_interval(secs => $6::double precision)
                                  ELSE next_attempt_at END,
           settled_at = CASE WHEN $3::text IN ('delivered', 'dead') THEN now() END
     WHERE id = $1::bigint
       AND ((status = 'sending' AND attempts = $2)
            OR ($3::text = 'delivered' AND status <> 'delivered'))
    RETURNING id
  ), kept AS (
    INSERT INTO hookgate.destination_attempts
      (delivery_id, attempt, started_at, duration_ms, http_status, error, response_head)
    VALUES ($1::bigint, $2, $7, $8, $4, $5, $9)
    ON CONFLICT (delivery_id, attempt) DO NOTHING
  )
  SELECT count(*)::int AS written FROM done`;

export interface AttemptOutcome {
  readonly status: 'delivered' | 'retrying' | 'dead';
  readonly httpStatus: number | null;
  readonly error: string | null;
  /** For `retrying`: how long until the next attempt. */
  readonly retryInSeconds: number;
  readonly startedAt: Date;
  readonly durationMs: number;
  readonly responseHead: string | null;
}

/** Records attempt `attempt`; false when the row was not changed (another attempt owns it). */
export async function finishAttempt(
  db: Queryable,
  id: string,
  attempt: number,
  outcome: AttemptOutcome,
): Promise<boolean> {
  const { rows } = await db.query<{ written: number }>(FINISH_ATTEMPT, [
    id,
    attempt,
    outcome.status,
    outcome.httpStatus,
    outcome.error,
    outcome.retryInSeconds,
    outcome.startedAt,
    Math.round(outcome.durationMs),
    outcome.responseHead,
  ]);
  return (rows[0]?.written ?? 0) > 0;
}
