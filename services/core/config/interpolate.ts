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
