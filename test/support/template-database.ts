import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { migrate } from '../../services/core/migrate/migrate.ts';

export interface TemplateDatabase {
  /** The database each migrated test database is copied from (`CREATE DATABASE … TEMPLATE`). */
  readonly name: string;
  drop(): Promise<void>;
}

/** The same server's URL for another database. */
export function withDatabase(url: string, database: string): string {
  const parsed = new URL(url);
  parsed.pathname = `/${database}`;
  return parsed.toString();
}

/**
 * Migrates one database once per run and per server (a global setup calls this), so that each
 * test file copies it instead of running every migration and pg-boss's install again. It is then
 * closed to connections: PostgreSQL copies a template only while nobody is connected to it, and
 * a stray connection would make every file's CREATE DATABASE fail. The name is random, so two
 * runs (or both projects) on one server never share or drop each other's template.
 */
export async function createTemplateDatabase(adminUrl: string): Promise<TemplateDatabase> {
  const name = `hookgate_template_${randomBytes(6).toString('hex')}`;
  const admin = new pg.Client({ connectionString: adminUrl });
  await admin.connect();
  try {
    await admin.query(`CREATE DATABASE ${name}`);
    const url = withDatabase(adminUrl, name);
    const client = new pg.Client({ connectionString: url });
    await client.connect();
    try {
      await migrate(client, url);
    } finally {
      await client.end();
    }
    await admin.query(`ALTER DATABASE ${name} WITH ALLOW_CONNECTIONS false`);
  } finally {
    await admin.end();
  }
  return {
    name,
    async drop() {
      const dropper = new pg.Client({ connectionString: adminUrl });
      await dropper.connect();
      try {
        await dropper.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      } finally {
        await dropper.end();
      }
    },
  };
}
