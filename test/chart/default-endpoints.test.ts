import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { CHART, find, render } from './tools.ts';

// Helm merges the user's maps into the chart's: an endpoint in the chart's values.yaml would be
// configured beside every user's own. The chart ships none, so the user's are the only ones.
describe("the chart's default endpoints", () => {
  it('are none', () => {
    const values = parse(readFileSync(join(CHART, 'values.yaml'), 'utf8')) as {
      config: { endpoints: Record<string, unknown> };
    };
    expect(values.config.endpoints).toEqual({});
  });

  it("leave the user's endpoints the only ones configured", async () => {
    const file = join(mkdtempSync(join(tmpdir(), 'hookgate-chart-values-')), 'values.yaml');
    writeFileSync(
      file,
      [
        'image: { repository: registry.example.com/hookgate }',
        'secrets: { existingSecret: hookgate-secrets }',
        'config:',
        '  endpoints:',
        '    payments-stripe:',
        '      provider: stripe',
        '      secrets: ["${STRIPE_WEBHOOK_SECRET}"]',
        '',
      ].join('\n'),
    );
    const manifests = await render({ valuesFiles: [file] });
    const data = find(manifests, 'ConfigMap', 'hookgate-config').data as Record<string, string>;
    const config = parse(data['hookgate.yaml'] ?? '') as { endpoints: Record<string, unknown> };
    expect(Object.keys(config.endpoints)).toEqual(['payments-stripe']);
  });
});
