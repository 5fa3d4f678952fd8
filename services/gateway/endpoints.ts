import { endpointBodyLimit } from '../core/config/body-limits.ts';
import type { Config, EndpointConfig } from '../core/config/schema.ts';
import { rawKeptFor } from '../core/destinations/routes.ts';
import { createProvider } from '../core/providers/index.ts';
import type { Provider } from '../core/providers/types.ts';

/** An endpoint as the gateway serves it: config resolved into a ready verifier. */
export interface Endpoint {
  readonly name: string;
  readonly config: EndpointConfig;
  readonly provider: Provider;
  /** Largest body accepted, in bytes: the endpoint's, its provider's maximum, or server.bodyLimit. */
  readonly bodyLimit: number;
  /** With a `body: raw` destination: the header names its claims keep with the bytes; else null. */
  readonly rawKept: readonly string[] | null;
}

export function buildEndpoints(config: Config): ReadonlyMap<string, Endpoint> {
  const endpoints = new Map<string, Endpoint>();
  for (const [name, endpoint] of Object.entries(config.endpoints)) {
    endpoints.set(name, {
      name,
      config: endpoint,
      provider: createProvider(endpoint),
      bodyLimit: endpointBodyLimit(endpoint, config.server.bodyLimit),
      rawKept: rawKeptFor(endpoint),
    });
  }
  return endpoints;
}
