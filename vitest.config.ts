import { defineConfig } from 'vitest/config';

// Two PostgreSQL majors: every file runs against the embedded PostgreSQL 18 (project `pg18`),
// and the integration files (the database-facing ones) and the load smoke run (real gateway and
// worker processes, then `hookgate verify`) again against a throwaway cluster of Debian's
// PostgreSQL 15, the oldest major hookgate supports (project `pg15`). Files that own a
// server of their own (database-outage) or touch no database (observability-rules) run once.
const ONCE = ['test/integration/database-outage.test.ts', 'test/integration/observability-rules.test.ts'];

export default defineConfig({
  test: {
    testTimeout: 60_000,
    hookTimeout: 120_000,
    // Two cores: files run two at a time, across both projects; each file gets its own database.
    maxWorkers: 2,
    pool: 'forks',
    reporters: ['default'],
    projects: [
      {
        extends: true,
        test: {
          name: 'pg18',
          include: ['test/**/*.test.ts'],
          globalSetup: ['test/support/global-setup.ts'],
        },
      },
      {
        extends: true,
        test: {
          name: 'pg15',
          include: ['test/integration/**/*.test.ts', 'test/e2e/load-smoke.test.ts'],
          exclude: ONCE,
          globalSetup: ['test/support/global-setup-pg15.ts'],
        },
      },
    ],
  },
});
