import type pg from 'pg';
import { HookgateError } from '../errors.ts';

/**
 * What a connection of hookgate's is, seen from PostgreSQL: its own session for as long as it
 * lasts (PostgreSQL directly, or PgBouncer in session mode), a backend lent per transaction
 * (PgBouncer in transaction mode), or per statement (statement mode: no transactions at all).
 */
export type PoolingMode = 'session' | 'transaction' | 'statement';

const BACKEND = 'SELECT pg_backend_pid() AS pid';
/** Statement pooling refuses this, before anything runs. */
const BEGIN_AND_BACKEND = 'BEGIN; SELECT pg_backend_pid() AS pid';

/** PgBouncer's refusal of a transaction in statement mode (1.x wording, no SQLSTATE of its own). */
const STATEMENT_POOLING = /statement pooling/i;

async function backend(client: pg.ClientBase): Promise<number> {
  return (await client.query<{ pid: number }>(BACKEND)).rows[0]!.pid;
}

/**
 * Finds out by watching which PostgreSQL backend answers. Connection A asks for its backend,
 * then connection B opens a transaction and asks for its own, then A asks again while B holds
 * its transaction. With sessions, A is answered by one backend throughout and B by another.
 * With transaction pooling, a backend A released is lent to B (PgBouncer hands out the server
 * it used last), or A's next statement goes to another backend than its first. Neither can
 * happen with sessions, so the answer "transaction" is never wrong; the probe is repeated so
 * that other clients' traffic through the same pooler cannot hide the sharing every time.
 */
export async function poolingMode(pool: pg.Pool, rounds = 3): Promise<PoolingMode> {
  for (let round = 0; round < rounds; round += 1) {
    const a = await pool.connect();
    let b: pg.PoolClient | null = null;
    let broken = false;
    try {
      const first = await backend(a);
      b = await pool.connect();
      let lent: number;
      try {
        const answers = (await b.query(BEGIN_AND_BACKEND)) as unknown as pg.QueryResult<{ pid: number }>[];
        lent = answers[1]!.rows[0]!.pid;
      } catch (error) {
        broken = true;
        if (STATEMENT_POOLING.test((error as Error).message)) return 'statement';
        throw error;
      }
      // Asked before A's next statement: with one backend to lend, A would wait for B's.
      if (lent === first) {
        await b.query('COMMIT');
        return 'transaction';
      }
      const again = await backend(a);
      await b.query('COMMIT');
      if (again !== first) return 'transaction';
    } catch (error) {
      broken = true;
      throw error;
    } finally {
      b?.release(broken);
      a.release(broken);
    }
  }
  return 'session';
}

/**
 * hookgate needs a session per connection. Tested through PgBouncer 1.18 in transaction mode:
 * the claim's named prepared statement is not found on the next backend (a share of deliveries
 * answered 503), the workers' LISTEN is silently lost, the limits set on each connection
 * (statement_timeout, idle_in_transaction_session_timeout) land on whichever backend ran the SET,
 * and `hookgate migrate`'s advisory lock may be released on another backend than the one holding
 * it. Rather than run with any of those, refuse at start and say what to change.
 */
export async function refuseSharedSessions(pool: pg.Pool, where: string): Promise<void> {
  const mode = await poolingMode(pool);
  if (mode === 'session') return;
  throw new HookgateError(
    'database_pooling_unsupported',
    `${where} lends each connection a different PostgreSQL session per ${mode} (PgBouncer in ${mode} mode); hookgate needs a session per connection. Set pool_mode = session for hookgate's database in PgBouncer (it can be set per database), or connect to PostgreSQL directly.`,
  );
}
