import type pg from 'pg';

/**
 * Runs `work` in one transaction on a pooled connection: COMMIT if it returns; if it throws, the
 * connection is discarded, and PostgreSQL rolls back the transaction of a session that ends. No
 * ROLLBACK is sent first: on a connection that stopped answering (a partition, a dead host) it
 * would wait out its own timeout before the error could be handled.
 */
export async function withTransaction<T>(
  pool: pg.Pool,
  /** `begun`: what the opening query returned (one result per statement of `options.begin`). */
  work: (client: pg.PoolClient, begun: readonly pg.QueryResult[]) => Promise<T>,
  options: {
    /** What opens the transaction, when more rides on its round trip (a constant text: no input). */
    readonly begin?: string;
  } = {},
): Promise<T> {
  const client = await pool.connect();
  let broken = false;
  try {
    const opened: pg.QueryResult | pg.QueryResult[] = await client.query(options.begin ?? 'BEGIN');
    const result = await work(client, Array.isArray(opened) ? opened : [opened]);
    await client.query('COMMIT');
    return result;
  } catch (error) {
    broken = true;
    throw error;
  } finally {
    client.release(broken);
  }
}
