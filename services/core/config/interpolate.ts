/**
 * Replaces `${NAME}` (and `${NAME:-fallback}`) inside string values of an already parsed
 * document. Substituting after parsing means a secret containing YAML syntax cannot change
 * the document's shape. `$${` escapes a literal `${`.
 */
export const REFERENCE = /\$(\$?)\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}/g;

export interface InterpolationProblem {
  readonly path: readonly (string | number)[];
  readonly variable: string;
}

/** `endpoints.<name>.handler` holding `sql:`: its references become bound parameters (handlers/sql.ts). */
function isSqlHandler(path: readonly (string | number)[], value: string): boolean {
  return path.length === 3 && path[0] === 'endpoints' && path[2] === 'handler' && value.startsWith('sql:');
}

export interface ResolvedText {
  readonly text: string;
  /** Referenced variables that are unset (or empty) and have no fallback; each became ''. */
  readonly missing: readonly string[];
  /** The values taken from the environment, by variable name. */
  readonly substituted: ReadonlyMap<string, string>;
}

/**
 * `${NAME}` references of one string resolved from `env` (own properties only: `${constructor}`
 * or `${__proto__}` must not find Object's members).
 */
export function resolveReferences(
  text: string,
  env: Readonly<Record<string, string | undefined>>,
): ResolvedText {
  const missing: string[] = [];
  const substituted = new Map<string, string>();
  const resolved = text.replace(
    REFERENCE,
    (whole, escaped: string, name: string, fallback: string | undefined) => {
      if (escaped) return whole.slice(1);
      const value = Object.hasOwn(env, name) ? env[name] : undefined;
      if (typeof value === 'string' && value !== '') {
        substituted.set(name, value);
        return value;
      }
      if (fallback !== undefined) return fallback;
      missing.push(name);
      return '';
    },
  );
  return { text: resolved, missing, substituted };
}

/**
 * Every environment variable the document's `${NAME}` references need, sorted: each string value
 * read as the loader reads it (resolveReferences: `$${` is no reference, a `${NAME:-fallback}`
 * needs nothing), `sql:` statements included, since their references are bound from the
 * environment too. What a deployment's environment (the chart's Secret) must hold for the
 * configuration; `hookgate config check` prints it, and the chart's NOTES.txt lists it with the
 * same pattern (REFERENCE, generated into the chart's files/generated/arithmetic.json).
 */
export function referencedVariables(document: unknown): string[] {
  const names = new Set<string>();
  const walk = (node: unknown): void => {
    if (typeof node === 'string') for (const name of resolveReferences(node, {}).missing) names.add(name);
    else if (Array.isArray(node)) node.forEach(walk);
    else if (node !== null && typeof node === 'object') Object.values(node).forEach(walk);
  };
  walk(document);
  return [...names].sort();
}

export function interpolateEnv(
  value: unknown,
  env: Readonly<Record<string, string | undefined>>,
  problems: InterpolationProblem[],
  path: readonly (string | number)[] = [],
): unknown {
  if (typeof value === 'string') {
    // Pasting a value into SQL text would let whoever sets the variable rewrite the statement.
    if (isSqlHandler(path, value)) return value;
    const resolved = resolveReferences(value, env);
    for (const variable of resolved.missing) problems.push({ path, variable });
    return resolved.text;
  }
  if (Array.isArray(value))
    return value.map((item, index) => interpolateEnv(item, env, problems, [...path, index]));
  if (value !== null && typeof value === 'object') {
    return Object.fromEntries(
      Object.entries(value).map(([key, item]) => [key, interpolateEnv(item, env, problems, [...path, key])]),
    );
  }
  return value;
}

// `${file:/path}`: a secret read from a mounted file (Vault agent, the Secrets Store CSI driver,
// a Kubernetes Secret volume). The two passes below run around interpolateEnv so that neither
// kind of reference can produce the other: a file's content is never read for `${NAME}`, and
// an environment value can never name a file to read.

/** `${file:/absolute/path}`; `$${file:…}` is a literal `${file:…}`. */
export const FILE_REFERENCE = /\$(\$?)\{file:([^}]*)\}/g;

export interface FileReferenceProblem {
  readonly path: readonly (string | number)[];
  readonly file: string;
  /** Why the file gives no secret, without its content. */
  readonly reason: string;
}

/** The files a document references, each replaced by a marker only `resolveFileReferences` reads. */
export interface MarkedFiles {
  readonly document: unknown;
  readonly files: ReadonlyMap<string, { readonly path: readonly (string | number)[]; readonly file: string }>;
  readonly marker: RegExp;
}

/**
 * Replaces every `${file:…}` with a marker holding a NUL byte and a per-load nonce: no
 * environment variable can hold a NUL, so no value substituted later can forge one.
 */
export function markFileReferences(value: unknown, nonce: string): MarkedFiles {
  const files = new Map<string, { path: readonly (string | number)[]; file: string }>();
  const walk = (node: unknown, path: readonly (string | number)[]): unknown => {
    if (typeof node === 'string') {
      // A `sql:` statement keeps its text: references there are bound parameters (handlers/sql.ts).
      if (isSqlHandler(path, node)) return node;
      return node.replace(FILE_REFERENCE, (whole, escaped: string, file: string) => {
        if (escaped) return whole.slice(1);
        const key = `\u0000${nonce}:${files.size}\u0000`;
        files.set(key, { path, file });
        return key;
      });
    }
    if (Array.isArray(node)) return node.map((item, index) => walk(item, [...path, index]));
    if (node !== null && typeof node === 'object') {
      return Object.fromEntries(Object.entries(node).map(([key, item]) => [key, walk(item, [...path, key])]));
    }
    return node;
  };
  return { document: walk(value, []), files, marker: new RegExp(`\u0000${nonce}:\\d+\u0000`, 'g') };
}

/**
 * Puts each referenced file's content where its marker is, read when the configuration loads (a
 * rotated file is read again by the next start), its trailing line break dropped (secret files usually end with one). A relative path, an unreadable or an empty
 * file is a problem naming the key and the file, never the content.
 */
export function resolveFileReferences(
  value: unknown,
  marked: MarkedFiles,
  readFile: (file: string) => string,
  problems: FileReferenceProblem[],
): unknown {
  const contents = new Map<string, string>();
  const contentOf = (key: string): string => {
    const known = contents.get(key);
    if (known !== undefined) return known;
    const reference = marked.files.get(key);
    if (!reference) return '';
    let content = '';
    if (!reference.file.startsWith('/')) {
      problems.push({ ...reference, reason: 'is not an absolute path' });
    } else {
      try {
        content = readFile(reference.file).replace(/\r?\n$/, '');
        if (content === '') problems.push({ ...reference, reason: 'is empty' });
      } catch (error) {
        const code = (error as { code?: unknown }).code;
        problems.push({
          ...reference,
          reason: `cannot be read (${typeof code === 'string' ? code : 'error'})`,
        });
      }
    }
    contents.set(key, content);
    return content;
  };
  const walk = (node: unknown): unknown => {
    if (typeof node === 'string') return node.replace(marked.marker, contentOf);
    if (Array.isArray(node)) return node.map(walk);
    if (node !== null && typeof node === 'object') {
      return Object.fromEntries(Object.entries(node).map(([key, item]) => [key, walk(item)]));
    }
    return node;
  };
  return marked.files.size === 0 ? value : walk(value);
}
