import { createGithubProvider } from './github.ts';
import { createHmacProvider } from './hmac.ts';
import type { HmacOptions } from './hmac-options.ts';
import { createPaddleProvider } from './paddle.ts';
import { PRESET_NAMES, PRESETS, type PresetName } from './presets.ts';
import { createSchemeProvider } from './scheme.ts';
import { type SchemeOptions, schemeFromOptions } from './scheme-options.ts';
import { createShopifyProvider } from './shopify.ts';
import { createSlackProvider } from './slack.ts';
import { createStandardWebhooksProvider } from './standard-webhooks.ts';
import { createStripeProvider } from './stripe.ts';
import type { ExtractOverrides, Provider } from './types.ts';

/** Providers with a file of their own and code written for them. */
const HAND_WRITTEN = ['standard-webhooks', 'svix', 'stripe', 'github', 'shopify', 'slack', 'paddle'] as const;

export const PROVIDER_NAMES = [...HAND_WRITTEN, ...PRESET_NAMES, 'hmac', 'scheme'] as const as readonly [
  (typeof HAND_WRITTEN)[number] | PresetName | 'hmac' | 'scheme',
  ...((typeof HAND_WRITTEN)[number] | PresetName | 'hmac' | 'scheme')[],
];

export type ProviderName = (typeof HAND_WRITTEN)[number] | PresetName | 'hmac' | 'scheme';

export function isPreset(name: string): name is PresetName {
  return Object.hasOwn(PRESETS, name);
}

export interface ProviderSpec {
  readonly provider: ProviderName;
  readonly extract?: ExtractOverrides | undefined;
  /** Required when `provider` is `hmac`, refused otherwise (the config schema checks). */
  readonly hmac?: HmacOptions | undefined;
  /** Required when `provider` is `scheme`, refused otherwise. */
  readonly scheme?: SchemeOptions | undefined;
  /** The URL the provider posts to and signs (Twilio, HubSpot, Square, a scheme signing `{url}`). */
  readonly url?: string | undefined;
  readonly handshake?: { readonly revealSecret?: boolean | undefined } | undefined;
}

export function createProvider(spec: ProviderSpec): Provider {
  const name = spec.provider;
  if (isPreset(name)) {
    return PRESETS[name].create({
      name,
      url: spec.url,
      overrides: spec.extract,
      revealHandshakeSecret: spec.handshake?.revealSecret,
    });
  }
  switch (name) {
    case 'standard-webhooks':
    case 'svix':
      // Svix is Standard Webhooks under `svix-*` header names; one verifier reads both.
      return createStandardWebhooksProvider(name, spec.extract);
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
    case 'scheme': {
      if (spec.scheme === undefined)
        throw new Error('The scheme provider needs its scheme options (algorithm, header, content, ...).');
      const { scheme, identity } = schemeFromOptions(spec.scheme);
      return createSchemeProvider('scheme', scheme, identity, {
        urls: spec.url === undefined ? [] : [spec.url],
        overrides: spec.extract,
      });
    }
    default: {
      const unknown: never = name;
      throw new Error(`Unknown provider ${String(unknown)}.`);
    }
  }
}
