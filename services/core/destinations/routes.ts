import { createHash } from 'node:crypto';
import type { DestinationConfig } from '../config/destinations-schema.ts';
import type { Config, EndpointConfig } from '../config/schema.ts';
import { type CompiledFilter, compileFilter } from './filter.ts';

/** One configured destination of one endpoint, its filter compiled. */
export interface Route {
  readonly endpoint: string;
  readonly name: string;
  readonly settings: DestinationConfig;
  readonly filter: CompiledFilter;
}

/** Each endpoint's destinations (endpoints without any are absent). */
export type Routes = ReadonlyMap<string, readonly Route[]>;

export function routesFrom(config: Pick<Config, 'endpoints'>): Routes {
  const routes = new Map<string, Route[]>();
  for (const [endpoint, settings] of Object.entries(config.endpoints)) {
    const list = Object.entries(settings.destinations ?? {}).map(([name, destination]) => ({
      endpoint,
      name,
      settings: destination,
      filter: compileFilter(destination.filter),
    }));
    if (list.length > 0) routes.set(endpoint, list);
  }
  return routes;
}

/**
 * How a report names a destination of a type other than HTTP: `events (nats)`. An HTTP
 * destination, or one the configuration does not have, is named as it always was.
 */
export function destinationLabel(
  config: Pick<Config, 'endpoints'> | null,
  endpoint: string,
  destination: string,
): string {
  const type = config?.endpoints[endpoint]?.destinations?.[destination]?.type;
  return type === undefined || type === 'http' ? destination : `${destination} (${type})`;
}

/**
 * The delivery's webhook-id (and Idempotency-Key): the same for every attempt and every
 * redelivery of one event to one destination, different across destinations, so a receiver
 * dedupes on it. A digest, so a provider's id (any text) makes a header-safe value.
 */
export function webhookIdFor(endpoint: string, eventId: string, destination: string): string {
  const digest = createHash('sha256').update(`${endpoint}\u0000${eventId}\u0000${destination}`).digest();
  return `msg_${digest.subarray(0, 18).toString('base64url')}`;
}

/**
 * What an endpoint's claims keep for its `body: raw` destinations: null when it has none (its
 * claims keep nothing more), else the header names (lower-case) any of them passes through.
 */
export function rawKeptFor(endpoint: Pick<EndpointConfig, 'destinations'>): readonly string[] | null {
  const raw = Object.values(endpoint.destinations ?? {}).filter((destination) => destination.body === 'raw');
  if (raw.length === 0) return null;
  const names = new Set(
    raw.flatMap((destination) => destination.passthroughHeaders ?? []).map((n) => n.toLowerCase()),
  );
  return [...names].sort();
}
