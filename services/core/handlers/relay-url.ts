import { resolveReferences } from '../config/interpolate.ts';
import { HookgateError } from '../errors.ts';

/**
 * A handler's relay URL option (config/relay-urls.ts) arrives as written, `${NAME}` references
 * and all. Its options are validated with the references resolved from `env` (an unset one is
 * refused when the handler is built, naming the option), while the outbox message carries the
 * URL as written: the relay resolves it when it sends, so no secret in it is stored.
 */
export function withUrlResolved(
  options: unknown,
  key: string,
  endpoint: string,
  env: Readonly<Record<string, string | undefined>>,
): { readonly options: unknown; readonly asWritten: string | undefined } {
  const written = (options as Record<string, unknown> | null | undefined)?.[key];
  if (typeof written !== 'string') return { options, asWritten: undefined };
  const resolved = resolveReferences(written, env);
  if (resolved.missing.length > 0) {
    throw new HookgateError(
      'handler_options_invalid',
      `${endpoint}.options.${key}: environment variable ${[...new Set(resolved.missing)].join(', ')} is not set`,
    );
  }
  return { options: { ...(options as Record<string, unknown>), [key]: resolved.text }, asWritten: written };
}
