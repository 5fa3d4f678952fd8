import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { endpointBodyLimit } from '../../services/core/config/body-limits.ts';
import { parseConfig } from '../../services/core/config/load.ts';
import { find, render, scenarioFile } from './tools.ts';

// The Ingress's nginx.ingress.kubernetes.io/proxy-body-size is the largest body any endpoint
// accepts, as hookgate itself decides each endpoint's limit (body-limits.ts): ingress-nginx's own
// default (1 MiB) would refuse GitHub's and GitLab's larger deliveries before hookgate sees them.
const ANNOTATION = 'nginx.ingress.kubernetes.io/proxy-body-size';
const UNITS: Record<string, number> = { k: 1024, m: 1024 * 1024 };

/** nginx's size (`25m`, `1465k`) in bytes. */
function nginxBytes(size: string): number {
  const match = /^(\d+)([km])$/.exec(size);
  if (!match) throw new Error(`${size} is not an nginx size the chart writes`);
  return Number(match[1]) * (UNITS[match[2]!] ?? 0);
}

const cases: { name: string; set: string[] }[] = [
  { name: 'the ingress scenario (one stripe endpoint)', set: [] },
  {
    name: 'a github endpoint beside it',
    set: [
      'config.endpoints.repos.provider=github',
      'config.endpoints.repos.secrets[0]=${GH}',
      'tests.endpoint=stripe',
    ],
  },
  {
    name: 'a gitlab endpoint with a lower limit of its own, a larger server.bodyLimit',
    set: [
      'config.endpoints.lab.provider=gitlab',
      'config.endpoints.lab.secrets[0]=${GL}',
      'config.endpoints.lab.bodyLimit=512kib',
      'config.server.bodyLimit=3mib',
      'tests.endpoint=stripe',
    ],
  },
  { name: 'an endpoint limit in bytes, not whole KiB', set: ['config.endpoints.stripe.bodyLimit=1500000'] },
];

describe("the Ingress's proxy-body-size", () => {
  it.each(cases)(
    '$name: lets through the largest endpoint limit hookgate decides, within a KiB',
    async ({ set }) => {
      const manifests = await render({ valuesFiles: [scenarioFile('ingress-values.yaml')], set });
      const ingress = find(manifests, 'Ingress', 'hookgate-gateway');
      const size = ingress.metadata.annotations?.[ANNOTATION];
      expect(size).toBeDefined();
      const data = find(manifests, 'ConfigMap', 'hookgate-config').data as Record<string, string>;
      const config = parseConfig(parse(data['hookgate.yaml'] ?? ''), {
        GH: 'x',
        GL: 'x',
        STRIPE_WEBHOOK_SECRET: 'x',
      });
      const largest = Math.max(
        ...Object.values(config.endpoints).map((endpoint) =>
          endpointBodyLimit(endpoint, config.server.bodyLimit),
        ),
      );
      const bytes = nginxBytes(String(size));
      expect(bytes).toBeGreaterThanOrEqual(largest);
      expect(bytes - largest).toBeLessThan(1024);
    },
  );
});
