import type pg from 'pg';

// Every statement on hookgate.destination_rate (migration 0014): the token bucket that limits a
// destination's deliveries per second across all workers. A claim refills and reads the bucket,
// claims at most its whole tokens, and takes what it claimed, in one transaction: the refill's
// row lock makes the workers of one destination take turns, so together they stay within it.

type Queryable = Pick<pg.Pool | pg.PoolClient, 'query'>;

/**
 * Tokens now: what was left plus the rate times the time since, up to the burst (a new bucket
 * starts full), at $5 (a test's driven clock) or, when none is passed, clock_timestamp(), not
 * now(): a claim that waited for the lock must not count from before the previous holder's
 * refill. The bucket's time never goes back (a caller's clock behind it refills nothing).
 */
const AT = 'coalesce($5::timestamptz, clock_timestamp())';
const REFILL = `
  INSERT INTO hookgate.destination_rate AS r (endpoint, destination, tokens, tokens_at)
  VALUES ($1, $2, $3::double precision, ${AT})
  ON CONFLICT (endpoint, destination) DO UPDATE
    SET tokens = least($3::double precision,
                       r.tokens + greatest(0, extract(epoch FROM ${AT} - r.tokens_at))
                                  * $4::double precision),
        tokens_at = greatest(r.tokens_at, ${AT})
  RETURNING tokens`;

const TAKE = `
  UPDATE hookgate.destination_rate SET tokens = tokens - $3
   WHERE endpoint = $1 AND destination = $2`;

export interface RateLimit {
  readonly perSecond: number;
  readonly burst: number;
}

export async function refillTokens(
  tx: Queryable,
  endpoint: string,
  destination: string,
  limit: RateLimit,
  now: Date | null = null,
): Promise<number> {
  const { rows } = await tx.query<{ tokens: number }>(REFILL, [
    endpoint,
    destination,
    limit.burst,
    limit.perSecond,
    now,
  ]);
  return rows[0]!.tokens;
}

export async function takeTokens(
  tx: Queryable,
  endpoint: string,
  destination: string,
  taken: number,
): Promise<void> {
  if (taken > 0) await tx.query(TAKE, [endpoint, destination, taken]);
}
