import type pg from 'pg';

/**
 * Runs `work` in one transaction on a pooled connection: COMMIT if it returns, ROLLBACK if it
 * throws. A connection that saw an error mid-transaction is discarded rather than reused.
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
    await client.query('ROLLBACK').catch(() => {});
    throw error;
  } finally {
    client.release(broken);
  }
}
