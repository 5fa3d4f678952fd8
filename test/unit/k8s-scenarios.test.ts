import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { SCENARIOS } from '../k8s/scenarios.ts';
import { ROOT } from '../support/process.ts';

// `make test-k8s` exercises every chart scenario on a real Kubernetes: test/k8s/scenarios.ts
// says what it does with each, and must name every file of charts/hookgate/ci/ (a scenario added
// there and forgotten here fails this test), and the Makefile must run the file that validates
// them all with the API server.
describe('make test-k8s and the chart scenarios', () => {
  it('test/k8s/scenarios.ts names exactly the ci/ scenarios', () => {
    const files = readdirSync(join(ROOT, 'charts/hookgate/ci')).filter((file) =>
      file.endsWith('-values.yaml'),
    );
    expect(Object.keys(SCENARIOS).sort()).toEqual(files.sort());
  });

  it('every scenario goes through the API server, and make test-k8s runs that test', () => {
    const validation = readFileSync(join(ROOT, 'test/k8s/chart-validation.test.ts'), 'utf8');
    expect(validation).toMatch(/it\.each\(Object\.keys\(SCENARIOS\)\)/);
    expect(validation).toMatch(/--dry-run=server/);
    const makefile = readFileSync(join(ROOT, 'Makefile'), 'utf8');
    const recipe = makefile.slice(makefile.indexOf('\ntest-k8s:'));
    expect(recipe).toMatch(/vitest run --config test\/k8s\/vitest\.config\.ts/);
    expect(recipe).not.toMatch(/--exclude[^\n]*chart-validation/);
    for (const [scenario, what] of Object.entries(SCENARIOS)) {
      for (const file of what.match(/[a-z-]+\.test\.ts/g) ?? []) {
        expect(readFileSync(join(ROOT, 'test/k8s', file), 'utf8'), `${scenario}: ${file}`).toContain(
          scenario,
        );
      }
    }
  });

  it('the root vitest projects leave test/k8s/ out (its time is not CI’s)', () => {
    const config = readFileSync(join(ROOT, 'vitest.config.ts'), 'utf8');
    expect(config).not.toMatch(/test\/k8s/);
    expect(config).not.toMatch(/'test\/\*\*/);
  });
});
