import { describe, expect, it } from 'vitest';
import { find, render, scenarioFile } from './tools.ts';

// The pods roll when the ConfigMap changes (and only then): the checksum annotation follows it.
const base = [scenarioFile('default-values.yaml')];

async function checksums(set: string[]): Promise<string[]> {
  const manifests = await render({ valuesFiles: base, set });
  return ['hookgate-gateway', 'hookgate-worker'].map((name) => {
    const spec = find(manifests, 'Deployment', name).spec as {
      template: { metadata: { annotations: Record<string, string> } };
    };
    return spec.template.metadata.annotations['checksum/config'] as string;
  });
}

describe('checksum/config', () => {
  it('changes on both Deployments when the configuration changes, and not otherwise', async () => {
    const before = await checksums([]);
    expect(before[0]).toMatch(/^[a-f0-9]{64}$/);
    const changed = await checksums(['config.server.bodyLimit=2mib']);
    const unrelated = await checksums(['gateway.replicaCount=5']);
    expect(changed[0]).not.toBe(before[0]);
    expect(changed[1]).not.toBe(before[1]);
    expect(unrelated).toEqual(before);
  });
});
