import { chmodSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { TestProject } from 'vitest/node';
import { startEmbeddedPostgres } from '../../services/core/db/embedded.ts';
import { type RunServer, shareOncePerRun } from './shared-server.ts';
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
 * One real PostgreSQL for the whole run of the PostgreSQL 18 projects (shared by all of them:
 * shared-server.ts): DATABASE_URL if set (e.g. the system server), otherwise an embedded
 * PostgreSQL 18 in a temporary directory, removed afterwards. The PostgreSQL 15 projects have
 * their own (global-setup-pg15.ts). On it, one database is migrated once for the run, the
 * template every migrated test database is copied from.
 */
async function start(): Promise<RunServer> {
  const given = process.env.DATABASE_URL?.trim();
  if (given) {
    const template = await createTemplateDatabase(given);
    return { adminUrl: given, major: null, templateDatabase: template.name, stop: () => template.drop() };
  }
  const dir = mkdtempSync(join(tmpdir(), 'hookgate-test-pg-'));
  // Run as root, PostgreSQL drops to the `postgres` user, which must be able to enter the directory.
  chmodSync(dir, 0o755);
  const database = await startEmbeddedPostgres(dir);
  const stop = async () => {
    await database.stop();
    rmSync(dir, { recursive: true, force: true });
  };
  // The cluster and its template go together when the run ends (or at once, if migrating fails).
  const template = await createTemplateDatabase(database.url).catch(async (error: unknown) => {
    await stop();
    throw error;
  });
  return { adminUrl: database.url, major: 18, templateDatabase: template.name, stop };
}

export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  const { server, release } = await shareOncePerRun('pg18', start);
  project.provide('adminDatabaseUrl', server.adminUrl);
  project.provide('postgresMajor', server.major);
  project.provide('templateDatabase', server.templateDatabase);
  return release;
}
