import type pg from 'pg';

// The reads behind the destinations' reports: `deliveries list|show`, `events show`, `stats`,
// and the held/dead gauge (hookgate.destination_deliveries and its attempts; the breaker's state
// for `stats`). Their writes live in services/core/destinations/.

type Queryable = Pick<pg.Pool | pg.PoolClient, 'query'>;

export interface DeliveryRow {
  readonly id: string;
  readonly endpoint: string;
  readonly destination: string;
  readonly event_id: string;
  readonly event_type: string;
  readonly webhook_id: string;
  readonly status: string;
  readonly attempts: number;
  readonly http_status: number | null;
  readonly last_error: string | null;
  readonly created_at: Date;
  readonly last_attempt_at: Date | null;
  readonly next_attempt_at: Date;
  readonly settled_at: Date | null;
}

// last_error bounded as it is read too: rows written before it was bounded on write.
const COLUMNS = `id::text AS id, endpoint, destination, event_id, event_type, webhook_id, status,
  attempts, http_status, left(last_error, 2000) AS last_error, created_at, last_attempt_at,
  next_attempt_at, settled_at`;

export interface DeliveryQuery {
  readonly endpoint?: string | undefined;
  readonly destination?: string | undefined;
  readonly status?: string | undefined;
  readonly since?: Date | undefined;
  /** Keyset: only deliveries older (a smaller id) than this one (the API's next page). */
  readonly beforeId?: string | undefined;
  readonly limit: number;
}

const LIST_DELIVERIES = `
  SELECT ${COLUMNS}
    FROM hookgate.destination_deliveries
   WHERE ($1::text IS NULL OR endpoint = $1)
     AND ($2::text IS NULL OR destination = $2)
     AND ($3::text IS NULL OR status = $3)
     AND ($4::timestamptz IS NULL OR created_at >= $4)
     AND ($6::bigint IS NULL OR destination_deliveries.id < $6::bigint)
   -- The column, not the text alias id: sorting the alias sorted text ('9' after '10') and
   -- kept destination_deliveries_list_idx out of the plan.
   ORDER BY destination_deliveries.id DESC
   LIMIT $5`;

export async function listDeliveryRows(db: Queryable, query: DeliveryQuery): Promise<DeliveryRow[]> {
  const { rows } = await db.query<DeliveryRow>(LIST_DELIVERIES, [
    query.endpoint ?? null,
    query.destination ?? null,
    query.status ?? null,
    query.since ?? null,
    query.limit,
    query.beforeId ?? null,
  ]);
  return rows;
}

const DELIVERIES_OF_EVENT = `
  SELECT ${COLUMNS} FROM hookgate.destination_deliveries
   WHERE endpoint = $1 AND event_id = $2 ORDER BY destination`;

/** One event's deliveries (the unique key's prefix finds them). */
export async function deliveriesOfEvent(
  db: Queryable,
  endpoint: string,
  eventId: string,
): Promise<DeliveryRow[]> {
  return (await db.query<DeliveryRow>(DELIVERIES_OF_EVENT, [endpoint, eventId])).rows;
}

export interface AttemptRow {
  readonly attempt: number;
  readonly started_at: Date;
  readonly duration_ms: number;
  readonly http_status: number | null;
  /** Escaped and bounded when written (services/core/destinations/answer.ts). */
  readonly error: string | null;
  /** The answer's first bytes as readable text, and its headers (`name: value` lines). */
  readonly response_head: string | null;
  readonly response_headers: string | null;
  /** The answer's first bytes (at most 1200), as hex. */
  readonly response_hex: string | null;
  /** No result was recorded: its lease ran out first. */
  readonly unrecorded: boolean;
}

const DELIVERY_BY_ID = `SELECT ${COLUMNS} FROM hookgate.destination_deliveries WHERE id = $1::bigint`;
const ATTEMPTS_OF = `
  SELECT attempt, started_at, duration_ms, http_status, left(error, 2000) AS error,
         left(response_head, 2000) AS response_head, left(response_headers, 4000) AS response_headers,
         encode(substring(response_bytes FROM 1 FOR 1200), 'hex') AS response_hex, unrecorded
    FROM hookgate.destination_attempts WHERE delivery_id = $1::bigint ORDER BY attempt`;

export async function deliveryWithAttempts(
  db: Queryable,
  id: string,
): Promise<{ delivery: DeliveryRow; attempts: AttemptRow[] } | null> {
  const delivery = (await db.query<DeliveryRow>(DELIVERY_BY_ID, [id])).rows[0];
  if (!delivery) return null;
  const attempts = (await db.query<AttemptRow>(ATTEMPTS_OF, [id])).rows;
  return { delivery, attempts };
}

/** Held and dead deliveries per destination, for the gauges (the partial stuck index). */
const STUCK_COUNTS = `
  SELECT endpoint, destination, status, count(*)::int AS count
    FROM hookgate.destination_deliveries
   WHERE status IN ('held', 'dead')
   GROUP BY endpoint, destination, status`;

export interface StuckCount {
  readonly endpoint: string;
  readonly destination: string;
  readonly status: 'held' | 'dead';
  readonly count: number;
}

export async function stuckCounts(db: Queryable): Promise<StuckCount[]> {
  return (await db.query<StuckCount>(STUCK_COUNTS)).rows;
}
/**
 * Per destination: what waits now (pending, retrying, sending), held and dead now (the partial
 * indexes), and, among those delivered since $1, how many and the p99 from written to delivered
 * (destination_deliveries_settled_idx); with its breaker's state.
 */
const DESTINATION_STATS = `
  WITH open_rows AS (
    -- Two halves, each the predicate of one partial index (destination_deliveries_due_idx,
    -- destination_deliveries_stuck_idx): one IN list spanning both matches neither, and the
    -- plan audit saw it read the whole table.
    SELECT endpoint, destination, sum(waiting)::int AS waiting, sum(held)::int AS held, sum(dead)::int AS dead
      FROM (
        SELECT endpoint, destination, count(*) AS waiting, 0 AS held, 0 AS dead
          FROM hookgate.destination_deliveries
         WHERE status IN ('pending', 'retrying', 'sending')
           AND ($2::text IS NULL OR endpoint = $2)
         GROUP BY endpoint, destination
        UNION ALL
        SELECT endpoint, destination, 0, count(*) FILTER (WHERE status = 'held'),
               count(*) FILTER (WHERE status = 'dead')
          FROM hookgate.destination_deliveries
         WHERE status IN ('held', 'dead')
           AND ($2::text IS NULL OR endpoint = $2)
         GROUP BY endpoint, destination
      ) AS halves
     GROUP BY endpoint, destination
  ), delivered AS (
    SELECT endpoint, destination, count(*)::int AS delivered,
           percentile_cont(0.99) WITHIN GROUP (ORDER BY extract(epoch FROM settled_at - created_at))
             AS p99_seconds
      FROM hookgate.destination_deliveries
     WHERE status = 'delivered' AND settled_at >= $1::timestamptz
       AND ($2::text IS NULL OR endpoint = $2)
     GROUP BY endpoint, destination
  )
  SELECT coalesce(o.endpoint, d.endpoint) AS endpoint, coalesce(o.destination, d.destination) AS destination,
         coalesce(o.waiting, 0) AS waiting, coalesce(o.held, 0) AS held, coalesce(o.dead, 0) AS dead,
         coalesce(d.delivered, 0) AS delivered, d.p99_seconds,
         coalesce(b.state, 'closed') AS breaker
    FROM open_rows o
    FULL JOIN delivered d ON d.endpoint = o.endpoint AND d.destination = o.destination
    LEFT JOIN hookgate.destination_breaker b
      ON b.endpoint = coalesce(o.endpoint, d.endpoint) AND b.destination = coalesce(o.destination, d.destination)
   ORDER BY 1, 2`;

export interface DestinationStatsRow {
  readonly endpoint: string;
  readonly destination: string;
  readonly waiting: number;
  readonly held: number;
  readonly dead: number;
  readonly delivered: number;
  readonly p99_seconds: number | null;
  readonly breaker: string;
}

export async function destinationStatsRows(
  db: Queryable,
  since: Date,
  endpoint: string | null,
): Promise<DestinationStatsRow[]> {
  return (await db.query<DestinationStatsRow>(DESTINATION_STATS, [since, endpoint])).rows;
}
