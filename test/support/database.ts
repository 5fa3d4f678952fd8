import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { inject } from 'vitest';
import { createPool } from '../../services/core/db/pool.ts';
import { withDatabase } from './template-database.ts';

export interface TestDatabase {
  readonly url: string;
  readonly name: string;
  /** A small pool for assertions; several connections for concurrency tests. */
  readonly pool: pg.Pool;
  drop(): Promise<void>;
}

/**
 * A fresh database on the run's PostgreSQL of its own. Migrated (the default), it is a copy of
 * the run's template (template-database.ts: migrated once by the global setup), as a database
 * `hookgate migrate` has just made would be; `migrated: false` gives an empty one, for the tests
 * that run the migrations themselves.
 */
export async function createTestDatabase(options: { migrated?: boolean } = {}): Promise<TestDatabase> {
  const adminUrl = inject('adminDatabaseUrl');
  // The unit project starts no server (vitest.config.ts): say so rather than fail to connect.
  if (!adminUrl)
    throw new Error('this project has no PostgreSQL: a test that needs one belongs in test/integration/');
  const name = `hookgate_test_${randomBytes(6).toString('hex')}`;
  const template = (options.migrated ?? true) ? ` TEMPLATE ${inject('templateDatabase')}` : '';
  const admin = new pg.Client({ connectionString: adminUrl });
  await admin.connect();
  try {
    await admin.query(`CREATE DATABASE ${name}${template}`);
  } finally {
    await admin.end();
  }
  const url = withDatabase(adminUrl, name);
  const pool = new pg.Pool({ connectionString: url, max: 10 });
  pool.on('error', () => {});
  return {
    url,
    name,
    pool,
    async drop() {
      await pool.end();
      const dropper = new pg.Client({ connectionString: adminUrl });
      await dropper.connect();
      await dropper.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      await dropper.end();
    },
  };
}

/**
 * A pool as hookgate's processes make one (its session settings included), with test-sized
 * limits: for code under test that takes a pool, as the claim and the apply batch do.
 */
export function createTestPool(url: string, applicationName: string, max = 2): pg.Pool {
  return createPool({
    connectionString: url,
    max,
    statementTimeoutMs: 30_000,
    connectTimeoutMs: 10_000,
    applicationName,
  });
}
