import type { Config } from './schema.ts';

/**
 * The fallback secrets written in the shipped hookgate.example.yaml. They are public, so an
 * endpoint using one accepts deliveries anyone can sign. A unit test keeps this list equal to
 * the example file's `${VAR:-fallback}` values.
 */
export const PUBLISHED_DEMO_SECRETS: readonly string[] = [
  'whsec_yVg1LulcM3w0Om+AAVsaLtF/Sk2F2QRo',
  'whsec_demo_only_not_a_real_secret',
];

/** Config paths (`endpoints.demo.secrets[0]`) whose secret is a published demo secret. */
export function demoSecretPaths(config: Config): string[] {
  const published = new Set(PUBLISHED_DEMO_SECRETS);
  const paths: string[] = [];
  for (const [name, endpoint] of Object.entries(config.endpoints)) {
    endpoint.secrets.forEach((secret, index) => {
      if (published.has(secret)) paths.push(`endpoints.${name}.secrets[${index}]`);
    });
  }
  return paths;
}
