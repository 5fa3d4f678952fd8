import type pg from 'pg';

/**
 * Runs `work` in one transaction on a pooled connection: COMMIT if it returns; if it throws, the
 * connection is discarded, and PostgreSQL rolls back the transaction of a session that ends. No
 * ROLLBACK is sent first: on a connection that stopped answering (a partition, a dead host) it
 * would wait out its own timeout before the error could be handled.
 */
export async function withTransaction<T>(
  pool: pg.Pool,
  work: (client: pg.PoolClient) => Promise<T>,
): Promise<T> {
  const client = await pool.connect();
  let broken = false;
  try {
    await client.query('BEGIN');
    const result = await work(client);
    await client.query('COMMIT');
    return result;
  } catch (error) {
    broken = true;
    throw error;
  } finally {
    client.release(broken);
  }
}
