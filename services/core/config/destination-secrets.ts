import type { DestinationConfig } from './destinations-schema.ts';
import { FILE_REFERENCE, resolveReferences } from './interpolate.ts';

// Which values of a destination's URL, headers and broker credentials came from a reference (`${NAME}`,
// `${file:…}`): they are resolved once, when the configuration loads, and from then on only
// their values exist. An error text may echo them (a receiver that answers with the path it was
// sent, fetch naming the URL), so the relay spells each back as its reference before an error is
// stored or logged (services/core/destinations/redact.ts). Kept beside the loaded configuration,
// keyed by the destination's own object, since the validated config holds no trace of them.

/** A value the configuration substituted, and the reference it was written as. */
export interface DestinationSecret {
  readonly reference: string;
  readonly value: string;
}

const known = new WeakMap<DestinationConfig, readonly DestinationSecret[]>();

/** The referenced values of one written string (`${NAME}` from env, `${file:/path}` read). */
function referencedValues(
  written: string,
  env: Readonly<Record<string, string | undefined>>,
  readFile: (file: string) => string,
): DestinationSecret[] {
  const found: DestinationSecret[] = [];
  for (const [name, value] of resolveReferences(written, env).substituted) {
    found.push({ reference: `\${${name}}`, value });
  }
  for (const match of written.matchAll(FILE_REFERENCE)) {
    if (match[1]) continue;
    try {
      const value = readFile(match[2]!).replace(/\r?\n$/, '');
      if (value !== '') found.push({ reference: `\${file:${match[2]}}`, value });
    } catch {
      // Unreadable files were reported by the load itself.
    }
  }
  return found;
}

/**
 * Notes, for each destination of the loaded config, the referenced values of its URL and header
 * values (from the document as written).
 */
export function noteDestinationSecrets(
  document: unknown,
  endpoints: Readonly<
    Record<string, { readonly destinations?: Readonly<Record<string, DestinationConfig>> | undefined }>
  >,
  env: Readonly<Record<string, string | undefined>>,
  readFile: (file: string) => string,
): void {
  type Bus = { username?: unknown; password?: unknown; token?: unknown };
  type Written = { url?: unknown; headers?: Record<string, unknown>; nats?: Bus; rabbitmq?: Bus };
  const writtenEndpoints = (
    document as { endpoints?: Record<string, { destinations?: Record<string, Written> }> } | null
  )?.endpoints;
  for (const [endpoint, settings] of Object.entries(endpoints)) {
    for (const [name, destination] of Object.entries(settings.destinations ?? {})) {
      const written = writtenEndpoints?.[endpoint]?.destinations?.[name];
      const bus = { ...written?.nats, ...written?.rabbitmq };
      const texts = [
        written?.url,
        ...Object.values(written?.headers ?? {}),
        bus.username,
        bus.password,
        bus.token,
      ].filter((text): text is string => typeof text === 'string');
      known.set(
        destination,
        texts.flatMap((text) => referencedValues(text, env, readFile)),
      );
    }
  }
}

/** The referenced values noted for this destination (none for one built without the loader). */
export function destinationSecrets(destination: DestinationConfig): readonly DestinationSecret[] {
  return known.get(destination) ?? [];
}
