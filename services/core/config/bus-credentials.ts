import { BUS_CREDENTIAL_KEYS } from './bus-schema.ts';

// A broker destination's credentials are references only (`${NAME}`, `${file:/path}`), each a
// field of its own: resolved once when the configuration loads, never written in the file, never
// part of an address (bus-schema.ts refuses `user:password@`), and never in a queued row. Checked
// on the document as written, since the validated configuration holds only the values.

/** The whole value is one reference: `${NAME}` or `${file:/path}`. */
const ONE_REFERENCE = /^\$\{(?:[A-Za-z_][A-Za-z0-9_]*|file:[^}]+)\}$/;

const asRecord = (value: unknown): Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value)
    ? (value as Record<string, unknown>)
    : {};

/** One line per credential written out (its value never quoted). */
export function busCredentialProblems(written: unknown): string[] {
  const lines: string[] = [];
  for (const [endpoint, settings] of Object.entries(asRecord(asRecord(written).endpoints))) {
    for (const [name, destination] of Object.entries(asRecord(asRecord(settings).destinations))) {
      for (const bus of ['nats', 'rabbitmq'] as const) {
        const block = asRecord(asRecord(destination)[bus]);
        for (const key of BUS_CREDENTIAL_KEYS) {
          const value = block[key];
          if (value === undefined || (typeof value === 'string' && ONE_REFERENCE.test(value.trim())))
            continue;
          lines.push(
            `endpoints.${endpoint}.destinations.${name}.${bus}.${key}: must be one reference, \${NAME} or \${file:/path}: a broker's credentials are not written in the configuration (the value is not shown)`,
          );
        }
      }
    }
  }
  return lines;
}
