import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createPool } from '../../services/core/db/pool.ts';
import { createTestDatabase, type TestDatabase } from '../support/database.ts';

let db: TestDatabase;

beforeAll(async () => {
  db = await createTestDatabase({ migrated: false });
});

afterAll(async () => {
  await db?.drop();
});

describe('pool', () => {
  it('survives the server ending a session that sat idle in a transaction: the next query fails instead', async () => {
    const pool = createPool({
      connectionString: db.url,
      max: 2,
      statementTimeoutMs: 5_000,
      connectTimeoutMs: 5_000,
      applicationName: 'test-idle',
      idleInTransactionTimeoutMs: 300,
    });
    try {
      const client = await pool.connect();
      await client.query('BEGIN');
      // Idle inside the transaction, as a handler awaiting something slow would be.
      await new Promise((resolve) => setTimeout(resolve, 1_000));
      await expect(client.query('SELECT 1')).rejects.toThrow();
      client.release(true);
      // The process is still here and the pool still serves.
      expect((await pool.query('SELECT 1 AS one')).rows[0].one).toBe(1);
    } finally {
      await pool.end();
    }
  });
});
