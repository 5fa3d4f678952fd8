import type { TestProject } from 'vitest/node';
import { startSystemCluster } from './system-postgres.ts';

/**
 * The `pg15` project's PostgreSQL: a throwaway cluster of Debian's PostgreSQL 15 (the oldest
 * major hookgate supports), made for this run and removed afterwards. HOOKGATE_TEST_PG15_URL
 * points the project at a server of your own instead.
 */
export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  const given = process.env.HOOKGATE_TEST_PG15_URL?.trim();
  if (given) {
    project.provide('adminDatabaseUrl', given);
    project.provide('postgresMajor', 15);
    return async () => {};
  }
  const cluster = await startSystemCluster(15);
  project.provide('adminDatabaseUrl', cluster.url);
  project.provide('postgresMajor', 15);
  return async () => {
    await cluster.stop();
  };
}
