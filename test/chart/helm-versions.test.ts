import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { ROOT } from '../support/process.ts';
import { CHART, find, render, run, scenarioFile, tool } from './tools.ts';

// The Helm and Kubernetes versions the chart says it supports are the ones it is tested with and
// declares: the Makefile's pinned Helm (what every chart test runs), Chart.yaml's kubeVersion,
// and the annotation the migration hook's message depends on.
const text = (path: string) => readFileSync(join(ROOT, path), 'utf8').replace(/\s+/g, ' ');
const makefile = readFileSync(join(ROOT, 'Makefile'), 'utf8');
const pinned = /^HELM_VERSION := v(\d+\.\d+\.\d+)$/m.exec(makefile)?.[1];

describe('Helm and Kubernetes versions', () => {
  it('the docs name the pinned Helm 4 as the tested one, and say what Helm 3 users see', async () => {
    expect(pinned).toMatch(/^4\./);
    const version = await run(tool('helm'), ['version', '--short']);
    expect(version.stdout).toMatch(new RegExp(`^v${pinned?.split('.').slice(0, 2).join('\\.')}`));
    const readme = text('charts/hookgate/README.md');
    const kubernetes = text('docs/kubernetes.md');
    for (const doc of [readme, kubernetes]) {
      expect(doc).toContain(`Helm ${pinned}`);
      expect(doc).toContain('Helm 3 is not tested');
      expect(doc).toContain('helm.sh/hook-output-log-policy: hook-failed');
      expect(doc).toContain('logs job/<release>-hookgate-migrate');
    }
    expect(readme).toContain('**Supported: Helm 4**');
    expect(kubernetes).toContain('Supported: **Helm 4**');
  });

  it('the migration Job carries the annotation the docs rely on, and deletes itself on failure', async () => {
    const manifests = await render({ valuesFiles: [scenarioFile('default-values.yaml')] });
    const job = find(manifests, 'Job', 'hookgate-migrate');
    expect(job.metadata.annotations?.['helm.sh/hook-output-log-policy']).toBe('hook-failed');
    expect(job.metadata.annotations?.['helm.sh/hook-delete-policy']).toContain('hook-failed');
  });

  it('Chart.yaml declares the kubeVersion the README requires', () => {
    const chart = parse(readFileSync(join(CHART, 'Chart.yaml'), 'utf8')) as { kubeVersion?: string };
    expect(chart.kubeVersion).toBe('>=1.26.0-0');
    expect(text('charts/hookgate/README.md')).toContain('Requires Kubernetes 1.26+ (`kubeVersion`');
    expect(text('docs/kubernetes.md')).toContain('`kubeVersion` (`>=1.26.0-0`');
  });
});
