import { BUS_CREDENTIAL_KEYS } from './bus-schema.ts';

// The keys of a destination that carry a secret must name it, never hold it: the configuration
// file is no secret (in Kubernetes it is a ConfigMap, readable by whoever reads the namespace's
// configuration, and shown by `helm get values`). This one rule is checked in two places, from
// these definitions: when hookgate loads its configuration (`config check`, `serve`, `migrate
// --check-config`: literalSecretProblems below), and by the chart's values.schema.json
// (test/chart/values-schema.ts builds its patterns from the sources exported here), so `helm
// install` refuses the same values hookgate would refuse at start. Checked on the document as
// written, before any reference is resolved.

/** A reference as a whole value: `${NAME}` or `${file:/absolute/path}`, without a fallback. */
const REFERENCE = String.raw`\$\{(?:[A-Za-z_][A-Za-z0-9_]*|file:/[^}]+)\}`;

/** A signing secret: exactly one reference. */
export const SECRET_REFERENCE_SOURCE = `^${REFERENCE}$`;

/**
 * A secret header's value: one reference, after an optional authentication scheme (`Bearer
 * ${TOKEN}`, `Basic ${CREDENTIALS}`); nothing else of it may be written out.
 */
export const SECRET_HEADER_VALUE_SOURCE = `^(?:[A-Za-z][A-Za-z0-9._~+/-]*[ ]+)?${REFERENCE}$`;

/** Words that make a header or a URL's query parameter a secret's, in any case. */
export const SECRET_WORDS: readonly string[] = ['authorization', 'token', 'key', 'secret', 'password'];

/** `[Tt][Oo][Kk][Ee][Nn]`: case-insensitive without flags, which a JSON Schema pattern cannot carry. */
const anyCase = (word: string): string =>
  [...word].map((c) => `[${c.toUpperCase()}${c.toLowerCase()}]`).join('');

const WORDS = `(?:${SECRET_WORDS.map(anyCase).join('|')})`;

/** A header name (or a query parameter's) containing one of SECRET_WORDS. */
export const SECRET_NAME_SOURCE = `^.*${WORDS}.*$`;

/**
 * A URL whose query has a parameter named like a secret whose value is written out rather than
 * beginning with a reference (`?api_key=abc` is refused, `?api_key=${API_KEY}` is not).
 */
export const LITERAL_SECRET_QUERY_SOURCE = String.raw`[?&][^=&#]*${WORDS}[^=&#]*=(?:[^$&#]|\$[^{])`;

const secretReference = new RegExp(SECRET_REFERENCE_SOURCE);
const secretHeaderValue = new RegExp(SECRET_HEADER_VALUE_SOURCE);
const secretName = new RegExp(SECRET_NAME_SOURCE);
const literalSecretQuery = new RegExp(LITERAL_SECRET_QUERY_SOURCE);

const USE_A_REFERENCE =
  // biome-ignore lint/suspicious/noTemplateCurlyInString: a ${NAME} reference, shown as the user writes it
  'the configuration is no secret (in Kubernetes a ConfigMap): write a reference to an environment variable, ${NAME}, or to a file, ${file:/path}, and put the value there (the chart: a key of its Secret)';

const entries = (node: unknown): [string, unknown][] =>
  node !== null && typeof node === 'object' && !Array.isArray(node) ? Object.entries(node) : [];

/**
 * Each key of a destination holding a literal secret, as a problem line naming its path and
 * never its value: signing secrets, the values of headers named like a secret (authorization,
 * token, key, secret, password), the URL's query parameters named so, and a message broker's
 * credentials (each a field of its own: bus-schema.ts refuses them inside an address).
 */
export function literalSecretProblems(document: unknown): string[] {
  const problems: string[] = [];
  const endpoints = entries(document).find(([key]) => key === 'endpoints')?.[1];
  for (const [endpoint, settings] of entries(endpoints)) {
    const destinations = entries(settings).find(([key]) => key === 'destinations')?.[1];
    for (const [name, destination] of entries(destinations)) {
      const at = (path: string) => `endpoints.${endpoint}.destinations.${name}.${path}`;
      const fields = Object.fromEntries(entries(destination));
      if (typeof fields.url === 'string' && literalSecretQuery.test(fields.url)) {
        problems.push(
          `${at('url')}: a query parameter named like a secret holds a literal value; ${USE_A_REFERENCE}`,
        );
      }
      const secrets = Object.fromEntries(entries(fields.signing)).secrets;
      if (Array.isArray(secrets)) {
        secrets.forEach((secret: unknown, index) => {
          if (typeof secret === 'string' && !secretReference.test(secret))
            problems.push(
              `${at(`signing.secrets[${index}]`)}: is a literal signing secret; ${USE_A_REFERENCE}`,
            );
        });
      }
      for (const bus of ['nats', 'rabbitmq'] as const) {
        for (const [key, value] of entries(fields[bus])) {
          if (!(BUS_CREDENTIAL_KEYS as readonly string[]).includes(key)) continue;
          if (typeof value === 'string' && secretReference.test(value)) continue;
          problems.push(
            `${at(`${bus}.${key}`)}: must be one reference, \${NAME} or \${file:/path}: a broker's credentials are not written in the configuration (the value is not shown)`,
          );
        }
      }
      for (const [header, value] of entries(fields.headers)) {
        if (!secretName.test(header) || typeof value !== 'string' || secretHeaderValue.test(value)) continue;
        problems.push(
          `${at(`headers.${header}`)}: is a literal secret (its name says it carries one); ${USE_A_REFERENCE}, after the scheme if it has one ("Bearer \${TOKEN}")`,
        );
      }
    }
  }
  return problems;
}
