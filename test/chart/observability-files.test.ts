import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { ROOT } from '../support/process.ts';
import { CHART, find, render, scenarioFile } from './tools.ts';

// One source: the PrometheusRule and the dashboard ConfigMap carry the very files that the
// promtool and Prometheus tests load (charts/hookgate/files/), with no second copy elsewhere.
describe('monitoring objects are built from charts/hookgate/files/', () => {
  it('the PrometheusRule spec is rules.yaml, and the dashboard ConfigMap holds the dashboard JSON', async () => {
    const manifests = await render({ valuesFiles: [scenarioFile('monitoring-values.yaml')] });
    const rules = parse(readFileSync(join(CHART, 'files/prometheus/rules.yaml'), 'utf8'));
    expect(find(manifests, 'PrometheusRule', 'hookgate').spec).toEqual(rules);
    const dashboard = readFileSync(join(CHART, 'files/grafana/hookgate-dashboard.json'), 'utf8');
    const data = find(manifests, 'ConfigMap', 'hookgate-dashboard').data as Record<string, string>;
    expect(JSON.parse(data['hookgate-dashboard.json'] as string)).toEqual(JSON.parse(dashboard));
  });

  it('the old observability/ copies are gone', () => {
    expect(existsSync(join(ROOT, 'observability/prometheus/rules.yaml'))).toBe(false);
    expect(existsSync(join(ROOT, 'observability/grafana/hookgate-dashboard.json'))).toBe(false);
  });
});
