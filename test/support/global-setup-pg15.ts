import type { TestProject } from 'vitest/node';
import { startSystemCluster } from './system-postgres.ts';
import { createTemplateDatabase } from './template-database.ts';

/**
 * The `pg15` project's PostgreSQL: a throwaway cluster of Debian's PostgreSQL 15 (the oldest
 * major hookgate supports), made for this run and removed afterwards. HOOKGATE_TEST_PG15_URL
 * points the project at a server of your own instead. Either way one database is migrated once
 * for the run, the template every migrated test database is copied from (template-database.ts).
 */
export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  const given = process.env.HOOKGATE_TEST_PG15_URL?.trim();
  if (given) {
    const template = await createTemplateDatabase(given);
    project.provide('adminDatabaseUrl', given);
    project.provide('postgresMajor', 15);
    project.provide('templateDatabase', template.name);
    return async () => {
      await template.drop();
    };
  }
  const cluster = await startSystemCluster(15);
  // The cluster and its template go together when the run ends (or at once, if migrating fails).
  const template = await createTemplateDatabase(cluster.url).catch(async (error: unknown) => {
    await cluster.stop();
    throw error;
  });
  project.provide('adminDatabaseUrl', cluster.url);
  project.provide('postgresMajor', 15);
  project.provide('templateDatabase', template.name);
  return async () => {
    await cluster.stop();
  };
}
