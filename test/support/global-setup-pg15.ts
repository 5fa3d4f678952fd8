import type { TestProject } from 'vitest/node';
import { type RunServer, shareOncePerRun } from './shared-server.ts';
import { startSystemCluster } from './system-postgres.ts';
import { createTemplateDatabase } from './template-database.ts';

/**
 * The PostgreSQL 15 projects' server (shared by them: shared-server.ts): a throwaway cluster of
 * Debian's PostgreSQL 15 (the oldest major hookgate supports), made for this run and removed
 * afterwards. HOOKGATE_TEST_PG15_URL points them at a server of your own instead. Either way one
 * database is migrated once for the run, the template every migrated test database is copied
 * from (template-database.ts).
 */
async function start(): Promise<RunServer> {
  const given = process.env.HOOKGATE_TEST_PG15_URL?.trim();
  if (given) {
    const template = await createTemplateDatabase(given);
    return { adminUrl: given, major: 15, templateDatabase: template.name, stop: () => template.drop() };
  }
  const cluster = await startSystemCluster(15);
  // The cluster and its template go together when the run ends (or at once, if migrating fails).
  const template = await createTemplateDatabase(cluster.url).catch(async (error: unknown) => {
    await cluster.stop();
    throw error;
  });
  return { adminUrl: cluster.url, major: 15, templateDatabase: template.name, stop: () => cluster.stop() };
}

export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  const { server, release } = await shareOncePerRun('pg15', start);
  project.provide('adminDatabaseUrl', server.adminUrl);
  project.provide('postgresMajor', server.major);
  project.provide('templateDatabase', server.templateDatabase);
  return release;
}
