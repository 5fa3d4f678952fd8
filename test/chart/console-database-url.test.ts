import { describe, expect, it } from 'vitest';
import { find, render, scenarioFile } from './tools.ts';

// console.databaseUrlSecret: the console Deployment's DATABASE_URL comes from a hookgate_console
// login's Secret (docs/console.md, "Database role"), and only the console's.
const base = [scenarioFile('console-values.yaml')];

interface EnvVar {
  name: string;
  valueFrom?: { secretKeyRef?: { name: string; key: string } };
}

async function urls(set: string[]): Promise<Record<string, unknown>> {
  const manifests = await render({ valuesFiles: base, set });
  return Object.fromEntries(
    ['hookgate-console', 'hookgate-gateway', 'hookgate-worker'].map((name) => {
      const spec = find(manifests, 'Deployment', name).spec as {
        template: { spec: { containers: Array<{ env: EnvVar[] }> } };
      };
      const env = spec.template.spec.containers[0]!.env.filter((entry) => entry.name === 'DATABASE_URL');
      expect(env).toHaveLength(1);
      return [name, env[0]!.valueFrom?.secretKeyRef];
    }),
  );
}

describe('console.databaseUrlSecret', () => {
  it("gives the console pods that Secret's URL and leaves the others theirs", async () => {
    const before = await urls([]);
    expect(before['hookgate-console']).toEqual(before['hookgate-gateway']);
    const after = await urls([
      'console.databaseUrlSecret.name=hookgate-console-db',
      'console.databaseUrlSecret.key=URL',
    ]);
    expect(after['hookgate-console']).toEqual({ name: 'hookgate-console-db', key: 'URL' });
    expect(after['hookgate-gateway']).toEqual(before['hookgate-gateway']);
    expect(after['hookgate-worker']).toEqual(before['hookgate-worker']);
  });
});
