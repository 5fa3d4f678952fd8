import { createGithubProvider } from './github.ts';
import { createHmacProvider } from './hmac.ts';
import type { HmacOptions } from './hmac-options.ts';
import { createPaddleProvider } from './paddle.ts';
import { createShopifyProvider } from './shopify.ts';
import { createSlackProvider } from './slack.ts';
import { createStandardWebhooksProvider } from './standard-webhooks.ts';
import { createStripeProvider } from './stripe.ts';
import type { ExtractOverrides, Provider } from './types.ts';

export const PROVIDER_NAMES = [
  'standard-webhooks',
  'svix',
  'stripe',
  'github',
  'shopify',
  'slack',
  'paddle',
  'hmac',
] as const;

export type ProviderName = (typeof PROVIDER_NAMES)[number];

export interface ProviderSpec {
  readonly provider: ProviderName;
  readonly extract?: ExtractOverrides | undefined;
  /** Required when `provider` is `hmac`, refused otherwise (the config schema checks). */
  readonly hmac?: HmacOptions | undefined;
}

export function createProvider(spec: ProviderSpec): Provider {
  switch (spec.provider) {
    case 'standard-webhooks':
    case 'svix':
      // Svix is Standard Webhooks under `svix-*` header names; one verifier reads both.
      return createStandardWebhooksProvider(spec.provider, spec.extract);
    case 'stripe':
      return createStripeProvider(spec.extract);
    case 'github':
      return createGithubProvider(spec.extract);
    case 'shopify':
      return createShopifyProvider(spec.extract);
    case 'slack':
      return createSlackProvider(spec.extract);
    case 'paddle':
      return createPaddleProvider(spec.extract);
    case 'hmac':
      if (spec.hmac === undefined)
        throw new Error('The hmac provider needs its hmac options (header, algorithm, ...).');
      return createHmacProvider(spec.hmac, spec.extract);
    default: {
      const unknown: never = spec.provider;
      throw new Error(`Unknown provider ${String(unknown)}.`);
    }
  }
}
