import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { defineConfig, type TestProjectInlineConfiguration } from 'vitest/config';
import { SECOND_MAJOR } from './test/support/second-major.ts';

// Projects by kind, so that `make check` can run the fast ones (unit, chart and a few integration
// files) while `make test` (plain `vitest run`) runs them all. Two PostgreSQL majors: every file
// that needs a database runs against the embedded PostgreSQL 18 (global-setup.ts: one server for
// all the PostgreSQL 18 projects), and the integration files where the major matters (plans,
// migrations, partitions, roles, PgBouncer, the claim and apply statements: the list and its rule
// are test/support/second-major.ts) and the load smoke run again against a throwaway cluster of
// Debian's PostgreSQL 15, the oldest major hookgate supports (the `-pg15` projects).
// The short forms of `make chaos`'s long runs, and the load smoke: minutes each, real processes.
const SOAK = [
  'test/e2e/chaos.test.ts',
  'test/e2e/recovery-backlog.test.ts',
  'test/e2e/failover.test.ts',
  'test/e2e/network-faults.test.ts',
  'test/e2e/pgbouncer.test.ts',
  'test/e2e/load-smoke.test.ts',
];
// The console's browser tests: one Chromium for all of them (test/support/browser-server.ts).
const BROWSER = ['test/e2e/*-browser.test.ts'];
// The chart's rendered pods run as local processes: minutes, real processes (not in `make check`).
const CHART_RUN = ['test/chart/render-and-run.test.ts', 'test/chart/render-and-run-console.test.ts'];
const PG18 = 'test/support/global-setup.ts';
const PG15 = 'test/support/global-setup-pg15.ts';
/**
 * Projects of real processes: a test there waits for states (bounded where it waits), and its
 * overall bound is generous, so that a busy machine slows it without failing it.
 */
const PROCESSES = { testTimeout: 300_000, hookTimeout: 300_000 };

function project(
  name: string,
  include: string[],
  globalSetup: string[],
  exclude: string[] = [],
  timeouts: { testTimeout?: number; hookTimeout?: number } = {},
) {
  return {
    extends: true,
    test: { name, include, exclude, globalSetup, ...timeouts },
  } satisfies TestProjectInlineConfiguration;
}

export default defineConfig({
  test: {
    // Bounds for a test that hangs, not for a slow one: a test waits for states, and a busy
    // machine (both cores taken by other work) may take minutes over what takes seconds here.
    testTimeout: 180_000,
    hookTimeout: 300_000,
    // Two cores: files run two at a time, across all projects; each file gets its own database.
    maxWorkers: 2,
    pool: 'forks',
    // The tests start hundreds of hookgate processes, each compiling the same modules: Node's
    // compile cache, shared by every process of the run (and the next run), halves the CPU each
    // start costs (0.9 s → 0.5 s for `hookgate --version` here). It changes nothing they do.
    env: { NODE_COMPILE_CACHE: join(tmpdir(), 'hookgate-test-node-compile-cache') },
    reporters: ['default'],
    projects: [
      // No database: no server is started for it.
      project('unit', ['test/unit/**/*.test.ts'], []),
      project('chart', ['test/chart/**/*.test.ts'], [PG18], CHART_RUN),
      project('chart-run', CHART_RUN, [PG18], [], PROCESSES),
      project('integration', ['test/integration/**/*.test.ts'], [PG18]),
      project('e2e', ['test/e2e/**/*.test.ts'], [PG18], [...SOAK, ...BROWSER], PROCESSES),
      project('e2e-browser', BROWSER, [PG18, 'test/support/browser-server.ts'], [], PROCESSES),
      project('soak', SOAK, [PG18], [], PROCESSES),
      project('integration-pg15', Object.keys(SECOND_MAJOR), [PG15]),
      project('soak-pg15', ['test/e2e/load-smoke.test.ts'], [PG15], [], PROCESSES),
    ],
  },
});
