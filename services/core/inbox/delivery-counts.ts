import type pg from 'pg';

/**
 * The per-minute delivery counts behind `stats`' duplicate rate go with the
 * inbox window: the rate is only ever read over windows the inbox still covers. Bounded
 * statements, oldest first, through the primary key's leading columns.
 */
const PRUNE_DELIVERY_COUNTS = `
  DELETE FROM hookgate.delivery_counts c
   USING (
     SELECT endpoint, minute, shard FROM hookgate.delivery_counts
      WHERE minute < now() - make_interval(secs => $1::double precision)
      LIMIT $2
   ) old
   WHERE c.endpoint = old.endpoint AND c.minute = old.minute AND c.shard = old.shard`;

const COUNT_DELIVERY_COUNTS = `
  SELECT count(*)::bigint AS n FROM hookgate.delivery_counts
   WHERE minute < now() - make_interval(secs => $1::double precision)`;

/** Delivery-count rows older than `seconds`. */
export async function countOldDeliveryCounts(db: pg.Pool | pg.ClientBase, seconds: number): Promise<number> {
  const { rows } = await db.query<{ n: string }>(COUNT_DELIVERY_COUNTS, [seconds]);
  return Number(rows[0]?.n ?? 0);
}

/** Deletes at most `limit` delivery-count rows older than `seconds`; returns how many. */
export async function pruneDeliveryCounts(
  db: pg.Pool | pg.ClientBase,
  seconds: number,
  limit: number,
): Promise<number> {
  return (await db.query(PRUNE_DELIVERY_COUNTS, [seconds, limit])).rowCount ?? 0;
}
