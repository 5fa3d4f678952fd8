import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { CHART, run, tool } from './tools.ts';

// The helm-unittest suites under charts/hookgate/tests/, one vitest test per suite, run with the
// pinned binary directly (not as a Helm plugin).
const SUITES = readdirSync(join(CHART, 'tests'))
  .filter((file) => file.endsWith('_test.yaml'))
  .sort();

describe('helm-unittest suites', () => {
  it('there are suites to run', () => {
    expect(SUITES.length).toBeGreaterThanOrEqual(10);
  });

  it.each(SUITES)('tests/%s passes', async (suite) => {
    const result = await run(tool('helm-unittest'), [
      '--strict',
      '--color=false',
      '-f',
      `tests/${suite}`,
      CHART,
    ]);
    const output = result.stdout + result.stderr;
    expect(output, output).toMatch(/Test Suites: 1 passed, 1 total/);
    expect(output).not.toMatch(/failed/);
    expect(result.code, output).toBe(0);
  });
});
