import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { ROOT } from '../support/process.ts';
import { CRDS } from './tools.ts';

// The CRDs kubectl-validate reads live in the repository (a clone alone runs the chart tests),
// and each one's upstream and version is written down beside it.
const files = readdirSync(CRDS).filter((file) => file.endsWith('.yaml'));
const readme = readFileSync(join(CRDS, 'README.md'), 'utf8');

interface Crd {
  readonly kind: string;
  readonly metadata: { name: string; annotations?: Record<string, string> };
  readonly spec: { group: string };
}

describe('vendored CRDs (test/chart/crds)', () => {
  it('are inside the repository and cover every custom resource kind the chart renders', () => {
    expect(CRDS.startsWith(`${ROOT}/`)).toBe(true);
    const groups = files.map((file) => (parse(readFileSync(join(CRDS, file), 'utf8')) as Crd).metadata.name);
    expect(groups.sort()).toEqual([
      'prometheusrules.monitoring.coreos.com',
      'scaledobjects.keda.sh',
      'servicemonitors.monitoring.coreos.com',
      'triggerauthentications.keda.sh',
    ]);
  });

  it.each(files)('%s has a README row naming its project, version and source URL', (file) => {
    const crd = parse(readFileSync(join(CRDS, file), 'utf8')) as Crd;
    expect(crd.kind).toBe('CustomResourceDefinition');
    const row = readme.split('\n').find((line) => line.startsWith(`| \`${file}\` |`));
    expect(row, `no row for ${file}`).toBeDefined();
    expect(row).toMatch(new RegExp(`\\| https://github\\.com/[^ ]+/${file.replaceAll('.', '\\.')} \\|$`));
    expect(row).toMatch(/ v\d+\.\d+\.\d+ /);
    // The row must agree with what the file says of itself: the project's version when it states
    // one, else its generator's (so a file replaced by another release's no longer matches).
    const annotations = crd.metadata.annotations ?? {};
    const project = annotations['operator.prometheus.io/version'];
    const generator = annotations['controller-gen.kubebuilder.io/version'];
    if (project) expect(row).toContain(`v${project} `);
    else expect(row).toContain(`${generator} here`);
  });
});
