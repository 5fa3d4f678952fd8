import type { z } from 'zod';
import { HookgateError } from '../errors.ts';

function pathOf(path: readonly PropertyKey[]): string {
  let out = '';
  for (const key of path) out += typeof key === 'number' ? `[${key}]` : `.${String(key)}`;
  return out;
}

/**
 * Validates an endpoint's `options:` map with a handler's own schema. Every problem names the
 * option as `<endpoint>.options.<key>`, so the error points at the line of the config to fix.
 */
export function parseHandlerOptions<S extends z.ZodType>(
  schema: S,
  options: unknown,
  endpoint: string,
): z.output<S> {
  const result = schema.safeParse(options ?? {});
  if (result.success) return result.data;
  const lines = result.error.issues.map((issue) => {
    if (issue.code === 'unrecognized_keys') {
      return issue.keys
        .map((key) => `${endpoint}.options${pathOf([...issue.path, key])}: unknown option`)
        .join('; ');
    }
    return `${endpoint}.options${pathOf(issue.path)}: ${issue.message}`;
  });
  throw new HookgateError('handler_options_invalid', lines.join('; '));
}
