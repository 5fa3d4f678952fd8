import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { inject } from 'vitest';
import { migrate } from '../../services/core/db/migrate.ts';
import { createPool } from '../../services/core/db/pool.ts';

export interface TestDatabase {
  readonly url: string;
  readonly name: string;
  /** A small pool for assertions; several connections for concurrency tests. */
  readonly pool: pg.Pool;
  drop(): Promise<void>;
}

function withDatabase(url: string, database: string): string {
  const parsed = new URL(url);
  parsed.pathname = `/${database}`;
  return parsed.toString();
}

/** A fresh, empty database on the run's PostgreSQL, optionally migrated. */
export async function createTestDatabase(options: { migrated?: boolean } = {}): Promise<TestDatabase> {
  const adminUrl = inject('adminDatabaseUrl');
  const name = `hookgate_test_${randomBytes(6).toString('hex')}`;
  const admin = new pg.Client({ connectionString: adminUrl });
  await admin.connect();
  await admin.query(`CREATE DATABASE ${name}`);
  await admin.end();
  const url = withDatabase(adminUrl, name);
  if (options.migrated ?? true) {
    const client = new pg.Client({ connectionString: url });
    await client.connect();
    await migrate(client, url);
    await client.end();
  }
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
