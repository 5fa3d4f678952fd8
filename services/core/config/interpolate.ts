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

export function interpolateEnv(
  value: unknown,
  env: Readonly<Record<string, string | undefined>>,
  problems: InterpolationProblem[],
  path: readonly (string | number)[] = [],
): unknown {
  if (typeof value === 'string') {
    // Pasting a value into SQL text would let whoever sets the variable rewrite the statement.
    if (isSqlHandler(path, value)) return value;
    return value.replace(REFERENCE, (whole, escaped: string, name: string, fallback: string | undefined) => {
      if (escaped) return whole.slice(1);
      // Own properties only: `${constructor}` or `${__proto__}` must not find Object's members.
      const resolved = Object.hasOwn(env, name) ? env[name] : undefined;
      if (typeof resolved === 'string' && resolved !== '') return resolved;
      if (fallback !== undefined) return fallback;
      problems.push({ path, variable: name });
      return '';
    });
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
