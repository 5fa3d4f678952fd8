import { createSchemeProvider, type SchemeHooks } from './scheme.ts';
import type { IdentitySpec, SchemeSpec } from './scheme-spec.ts';
import type { ExtractOverrides, Provider } from './types.ts';

/**
 * How a preset is proven, strongest first: the provider's own library signs or verifies the same
 * bytes in a test; else the provider's published example (its URL and values are in the test);
 * else a computation from the provider's documentation, stated as such.
 */
export type EvidenceKind = 'sdk' | 'example' | 'docs';

export interface Evidence {
  readonly kind: EvidenceKind;
  /** The npm package (sdk) or the documentation page (example, docs). */
  readonly source: string;
}

/** What an endpoint's configuration gives a preset. */
export interface PresetSettings {
  readonly name: string;
  /** The URL the provider posts to, as configured there (presets with `needsUrl`). */
  readonly url?: string | undefined;
  readonly overrides?: ExtractOverrides | undefined;
  /** Asana only: put the handshake's secret in the log line (see docs/providers.md). */
  readonly revealHandshakeSecret?: boolean | undefined;
}

/** A provider with what proves it. */
export interface Preset {
  readonly title: string;
  /** The scheme it verifies, when it is one (Mailgun's is not: it signs body fields). */
  readonly scheme?: SchemeSpec;
  /** The provider signs the URL it posts to: the endpoint must say it (`url:`). */
  readonly needsUrl?: boolean;
  readonly evidence: Evidence;
  create(settings: PresetSettings): Provider;
}

export interface SchemePresetDefinition {
  readonly title: string;
  readonly scheme: SchemeSpec;
  readonly identity: IdentitySpec;
  readonly needsUrl?: boolean;
  readonly evidence: Evidence;
  readonly hooks?: (settings: PresetSettings) => SchemeHooks;
  /** The URLs to try for the configured one (Twilio's library tries it with and without the port). */
  readonly urls?: (url: string) => readonly string[];
  /** Deliveries are acknowledged with an empty body (Provider.emptyAcknowledgement). */
  readonly emptyAcknowledgement?: boolean;
}

/** A preset that a scheme and an identity spec can say. */
export function schemePreset(definition: SchemePresetDefinition): Preset {
  return {
    title: definition.title,
    scheme: definition.scheme,
    ...(definition.needsUrl ? { needsUrl: true } : {}),
    evidence: definition.evidence,
    create(settings) {
      const url = settings.url;
      const provider = createSchemeProvider(settings.name, definition.scheme, definition.identity, {
        urls: url === undefined ? [] : (definition.urls?.(url) ?? [url]),
        overrides: settings.overrides,
        ...(definition.hooks ? { hooks: definition.hooks(settings) } : {}),
      });
      return definition.emptyAcknowledgement ? { ...provider, emptyAcknowledgement: true } : provider;
    },
  };
}
