import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { parseConfig } from '../../services/core/config/load.ts';
import { CRDS, helm, KUBE_VERSION, parseManifests, run, SCENARIOS, scenarioFile, tool } from './tools.ts';

// Every CI scenario: lint --strict, template, then kubectl-validate against Kubernetes' own
// schemas and the CRDs beside the project (ServiceMonitor, PrometheusRule, ScaledObject,
// TriggerAuthentication). Offline: KUBECONFIG=/dev/null.
const kubeMinor = KUBE_VERSION.split('.').slice(0, 2).join('.');

async function kubectlValidate(file: string) {
  return run(tool('kubectl-validate'), [file, '--version', kubeMinor, '--local-crds', CRDS], {
    KUBECONFIG: '/dev/null',
  });
}

function writeTemp(name: string, text: string): string {
  const file = join(mkdtempSync(join(tmpdir(), 'hookgate-chart-')), name);
  writeFileSync(file, text);
  return file;
}

describe.each(SCENARIOS)('scenario ci/%s', (scenario) => {
  it('passes helm lint --strict', async () => {
    const result = await helm('lint', { valuesFiles: [scenarioFile(scenario)] });
    expect(result.stderr + result.stdout).toMatch(/1 chart\(s\) linted, 0 chart\(s\) failed/);
    expect(result.code).toBe(0);
  });

  it('renders manifests that kubectl-validate accepts (built-in schemas + CRDs)', async () => {
    const rendered = await helm('template', { valuesFiles: [scenarioFile(scenario)] });
    expect(rendered.stderr).toBe('');
    expect(rendered.code).toBe(0);
    const manifests = parseManifests(rendered.stdout);
    expect(manifests.length).toBeGreaterThan(5);
    const result = await kubectlValidate(writeTemp(`${scenario}`, rendered.stdout));
    expect(result.stdout + result.stderr).not.toMatch(/ERROR/);
    expect(result.code).toBe(0);
  });

  it("renders a ConfigMap that hookgate's own config loader accepts", async () => {
    const rendered = await helm('template', {
      valuesFiles: [scenarioFile(scenario)],
      showOnly: ['templates/configmap.yaml'],
    });
    expect(rendered.code).toBe(0);
    const [configMap] = parseManifests(rendered.stdout);
    const text = ((configMap?.data ?? {}) as Record<string, string>)['hookgate.yaml'] ?? '';
    // Every ${NAME} gets a value, as the Secret's keys would provide at run time.
    const env: Record<string, string> = {};
    for (const match of text.matchAll(/\$\{([A-Za-z_][A-Za-z0-9_]*)\}/g))
      env[match[1] as string] = 'x'.repeat(32);
    expect(Object.keys(env).length).toBeGreaterThan(0);
    const config = parseConfig(parse(text), env);
    expect(Object.keys(config.endpoints).length).toBeGreaterThan(0);
  });
});

describe('kubectl-validate (negative control)', () => {
  it('rejects a ScaledObject and a Deployment with wrong types, so its passes mean something', async () => {
    const file = writeTemp(
      'broken.yaml',
      [
        'apiVersion: keda.sh/v1alpha1',
        'kind: ScaledObject',
        'metadata: {name: x}',
        'spec: {scaleTargetRef: {name: y}, minReplicaCount: lots, triggers: [{type: postgresql, metadata: {}}]}',
        '---',
        'apiVersion: apps/v1',
        'kind: Deployment',
        'metadata: {name: d}',
        'spec: {replicas: two}',
      ].join('\n'),
    );
    const result = await kubectlValidate(file);
    expect(result.code).not.toBe(0);
    expect(result.stdout + result.stderr).toMatch(/minReplicaCount/);
    expect(result.stdout + result.stderr).toMatch(/spec.replicas/);
  });
});
