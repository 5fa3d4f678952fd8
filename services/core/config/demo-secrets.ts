import { standardWebhooksKey } from '../providers/standard-webhooks.ts';
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

/**
 * The keys a configured secret can stand for: its text (the HMAC key of Stripe, GitHub and the
 * other schemes that use a secret verbatim), and the bytes it decodes to as a Standard Webhooks
 * key. The verifier accepts such a key with or without `whsec_`, in either base64 alphabet and
 * with or without padding, so comparing the text let a re-spelling of a published key through.
 */
function keysOf(secret: string): string[] {
  const keys = [Buffer.from(secret, 'utf8').toString('hex')];
  const decoded = standardWebhooksKey(secret);
  if (decoded) keys.push(decoded.toString('hex'));
  return keys;
}

const PUBLISHED_KEYS: ReadonlySet<string> = new Set(PUBLISHED_DEMO_SECRETS.flatMap(keysOf));

/** Config paths (`endpoints.demo.secrets[0]`) whose secret is a published demo secret, however spelled. */
export function demoSecretPaths(config: Config): string[] {
  const paths: string[] = [];
  for (const [name, endpoint] of Object.entries(config.endpoints)) {
    endpoint.secrets.forEach((secret, index) => {
      if (keysOf(secret).some((key) => PUBLISHED_KEYS.has(key)))
        paths.push(`endpoints.${name}.secrets[${index}]`);
    });
  }
  return paths;
}
