import { chmodSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { TestProject } from 'vitest/node';
import { startEmbeddedPostgres } from '../../services/core/db/embedded.ts';
import { createTemplateDatabase } from './template-database.ts';

declare module 'vitest' {
  export interface ProvidedContext {
    /** A superuser URL; each test file creates its own database from it. */
    adminDatabaseUrl: string;
    /** The PostgreSQL major the project was given (null: DATABASE_URL, whatever it runs). */
    postgresMajor: number | null;
    /** The migrated database that createTestDatabase copies (template-database.ts). */
    templateDatabase: string;
  }
}

/**
 * One real PostgreSQL for the whole run of the default project: DATABASE_URL if set (e.g. the
 * system server), otherwise an embedded PostgreSQL 18 in a temporary directory, removed
 * afterwards. The `pg15` project has its own (global-setup-pg15.ts). On it, one database is
 * migrated once for the run, the template every migrated test database is copied from.
 */
export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  const given = process.env.DATABASE_URL?.trim();
  if (given) {
    const template = await createTemplateDatabase(given);
    project.provide('adminDatabaseUrl', given);
    project.provide('postgresMajor', null);
    project.provide('templateDatabase', template.name);
    return async () => {
      await template.drop();
    };
  }
  const dir = mkdtempSync(join(tmpdir(), 'hookgate-test-pg-'));
  // Run as root, PostgreSQL drops to the `postgres` user, which must be able to enter the directory.
  chmodSync(dir, 0o755);
  const database = await startEmbeddedPostgres(dir);
  // The cluster and its template go together when the run ends (or at once, if migrating fails).
  const template = await createTemplateDatabase(database.url).catch(async (error: unknown) => {
    await database.stop();
    throw error;
  });
  project.provide('adminDatabaseUrl', database.url);
  project.provide('postgresMajor', 18);
  project.provide('templateDatabase', template.name);
  return async () => {
    await database.stop();
    rmSync(dir, { recursive: true, force: true });
  };
}
