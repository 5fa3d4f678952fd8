import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { SCENARIOS } from './scenarios.ts';
import { CHART, helmOk, installCrds, kubectl, kubectlOk, restrictedNamespace } from './support/cluster.ts';

// Every ci/ scenario as the API server of a real Kubernetes judges it: rendered by Helm for this
// cluster's version, applied with --dry-run=server and strict field validation (an unknown or
// misplaced field is an error, not a warning), the vendored CRDs installed so that ScaledObject,
// ServiceMonitor and PrometheusRule are checked against their schemas, in a namespace that
// enforces PodSecurity `restricted` (and warns: any warning fails the test).

const NAMESPACE = 'hookgate-validate';

beforeAll(async () => {
  await installCrds();
  await restrictedNamespace(NAMESPACE);
  // Admission checks a bare Pod's ServiceAccount exists (the `helm test` Pod's); in an install
  // the chart's is a hook created before anything else, so it is there when the Pod comes.
  await kubectlOk(['create', 'serviceaccount', 'hookgate', '--save-config', '--namespace', NAMESPACE]);
});

describe('every chart scenario is accepted by the API server', () => {
  it.each(Object.keys(SCENARIOS))('%s', async (scenario) => {
    const rendered = await helmOk([
      'template',
      'hookgate',
      CHART,
      '--namespace',
      NAMESPACE,
      '--kube-version',
      'v1.34.4',
      '-f',
      join(CHART, 'ci', scenario),
    ]);
    const applied = await kubectl(
      ['apply', '--dry-run=server', '--validate=strict', '--namespace', NAMESPACE, '-f', '-'],
      rendered,
    );
    expect(applied.code, applied.stderr).toBe(0);
    expect(applied.stderr, 'no warning (PodSecurity, deprecated or unknown fields)').toBe('');
    expect(applied.stdout).toMatch(/deployment\.apps\/hookgate-gateway created \(server dry run\)/);
  });
});
