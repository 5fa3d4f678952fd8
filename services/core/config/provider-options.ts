import { decodeBase64Key } from '../providers/crypto.ts';
import { isPreset } from '../providers/index.ts';
import { type AsymmetricAlgorithm, KEY_SHAPES, publicKey } from '../providers/keys.ts';
import { PRESETS } from '../providers/presets.ts';
import { parseTemplate } from '../providers/scheme-options.ts';
import { isStandardWebhooksPublicKey, standardWebhooksKey } from '../providers/standard-webhooks.ts';

export interface ProviderIssue {
  readonly path: PropertyKey[];
  readonly message: string;
}

/** The fields of an endpoint these rules read; any of them may be invalid when they run. */
interface EndpointFields {
  readonly provider?: unknown;
  readonly secrets?: unknown;
  readonly hmac?: unknown;
  readonly scheme?: unknown;
  readonly url?: unknown;
  readonly handshake?: unknown;
}

const ASYMMETRIC = new Set(['ed25519', 'ecdsa-p256-sha256', 'rsa-sha256']);

/** The algorithm the endpoint's keys must fit, and what to call them in messages. */
function keyAlgorithm(endpoint: EndpointFields): AsymmetricAlgorithm | null {
  const provider = endpoint.provider;
  if (typeof provider === 'string' && isPreset(provider)) {
    const algorithm = PRESETS[provider].scheme?.algorithm;
    return algorithm !== undefined && ASYMMETRIC.has(algorithm) ? (algorithm as AsymmetricAlgorithm) : null;
  }
  if (provider === 'scheme' && typeof endpoint.scheme === 'object' && endpoint.scheme !== null) {
    const algorithm = (endpoint.scheme as { algorithm?: unknown }).algorithm;
    return typeof algorithm === 'string' && ASYMMETRIC.has(algorithm)
      ? (algorithm as AsymmetricAlgorithm)
      : null;
  }
  return null;
}

/** Whether the endpoint's provider signs the URL it posts to, so `url` is needed. */
function signsUrl(endpoint: EndpointFields): boolean {
  const provider = endpoint.provider;
  if (typeof provider === 'string' && isPreset(provider)) return PRESETS[provider].needsUrl === true;
  if (provider !== 'scheme' || typeof endpoint.scheme !== 'object' || endpoint.scheme === null) return false;
  const content = (endpoint.scheme as { content?: unknown }).content;
  if (typeof content !== 'string') return false;
  try {
    return parseTemplate(content).some((piece) => 'part' in piece && piece.part === 'url');
  } catch {
    return false;
  }
}

/**
 * The provider-specific rules of an endpoint, each naming the key at fault: options only one
 * provider uses, and keys and secrets that could never verify anything.
 */
export function providerIssues(endpoint: EndpointFields): ProviderIssue[] {
  const issues: ProviderIssue[] = [];
  const provider = endpoint.provider;
  const secrets = Array.isArray(endpoint.secrets) ? endpoint.secrets : [];
  const each = (check: (secret: string) => string | null) =>
    secrets.forEach((secret: unknown, index) => {
      if (typeof secret !== 'string' || secret === '') return;
      const message = check(secret);
      if (message !== null) issues.push({ path: ['secrets', index], message });
    });

  if (provider === 'standard-webhooks' || provider === 'svix') {
    each((secret) => {
      if (secret.startsWith('whsk_'))
        return 'is a Standard Webhooks signing (private) key: configure its public key (whpk_…) instead';
      if (isStandardWebhooksPublicKey(secret))
        return publicKey('ed25519', secret) === null
          ? 'is not a Standard Webhooks public key: expected whpk_ followed by the base64 of 32 bytes'
          : null;
      return standardWebhooksKey(secret) === null
        ? 'is not a Standard Webhooks secret: expected whsec_ followed by base64 (or whpk_ for a v1a public key)'
        : null;
    });
  }
  const algorithm = keyAlgorithm(endpoint);
  if (algorithm !== null) {
    each((secret) => (publicKey(algorithm, secret) === null ? `is not ${KEY_SHAPES[algorithm]}` : null));
  }

  // A scheme's HMAC secrets in an encoding: one that does not decode could never verify.
  const secretFormat =
    provider === 'scheme' && typeof endpoint.scheme === 'object' && endpoint.scheme !== null
      ? (endpoint.scheme as { secretFormat?: unknown }).secretFormat
      : undefined;
  if (secretFormat === 'hex')
    each((secret) =>
      /^(?:[0-9a-fA-F]{2})+$/.test(secret) ? null : 'is not hex, as scheme.secretFormat says',
    );
  if (secretFormat === 'base64')
    each((secret) =>
      decodeBase64Key(secret) === null ? 'is not base64, as scheme.secretFormat says' : null,
    );
  if (secretFormat === 'whsec')
    each((secret) =>
      standardWebhooksKey(secret) === null
        ? 'is not a whsec_ secret (whsec_ followed by base64), as scheme.secretFormat says'
        : null,
    );

  if (provider === 'hmac' && !endpoint.hmac)
    issues.push({ path: ['hmac'], message: 'is required when provider is hmac' });
  if (provider !== 'hmac' && endpoint.hmac)
    issues.push({ path: ['hmac'], message: 'is only allowed when provider is hmac' });
  if (provider === 'scheme' && !endpoint.scheme)
    issues.push({ path: ['scheme'], message: 'is required when provider is scheme' });
  if (provider !== 'scheme' && endpoint.scheme)
    issues.push({ path: ['scheme'], message: 'is only allowed when provider is scheme' });

  const needsUrl = signsUrl(endpoint);
  if (needsUrl && endpoint.url === undefined) {
    issues.push({
      path: ['url'],
      message: `is required for ${String(provider)}: the URL the provider posts to, exactly as configured there (it is signed)`,
    });
  }
  if (!needsUrl && endpoint.url !== undefined) {
    issues.push({
      path: ['url'],
      message:
        'is only used by providers that sign the URL (twilio, hubspot, square, or a scheme signing {url})',
    });
  }
  if (endpoint.handshake !== undefined && provider !== 'asana')
    issues.push({ path: ['handshake'], message: 'is only used by the asana provider' });
  return issues;
}
