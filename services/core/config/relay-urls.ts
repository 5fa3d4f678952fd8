import type { Config } from './schema.ts';

/**
 * Handler options holding a URL the relay sends to. A downstream that authenticates by a token
 * in its URL gets it through `${NAME}` (so that it lives in a Secret, not in the config file);
 * resolved when the config loads, the token was stored in every outbox job and in
 * hookgate.outbox_deliveries.url, and printed by `hookgate events show`. These options are
 * validated resolved, like every other string, but kept as written: the handler queues the URL
 * with its references, and the relay resolves them from its own environment when it sends.
 */
export const RELAY_URL_OPTIONS: Readonly<Record<string, string>> = { forward: 'url', billing: 'notifyUrl' };

/** Puts each endpoint's relay URL option back as the document wrote it (see RELAY_URL_OPTIONS). */
export function keepRelayUrlsAsWritten(document: unknown, config: Config): void {
  const written = (document as { endpoints?: Record<string, { options?: Record<string, unknown> }> } | null)
    ?.endpoints;
  for (const [name, endpoint] of Object.entries(config.endpoints)) {
    const key = Object.hasOwn(RELAY_URL_OPTIONS, endpoint.handler)
      ? RELAY_URL_OPTIONS[endpoint.handler]
      : undefined;
    const text = key === undefined ? undefined : written?.[name]?.options?.[key];
    if (key !== undefined && typeof text === 'string' && typeof endpoint.options[key] === 'string') {
      endpoint.options[key] = text;
    }
  }
}
