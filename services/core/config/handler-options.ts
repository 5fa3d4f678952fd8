import type { z } from 'zod';
import { handlerKindOf } from './handler-kinds.ts';

/**
 * The option schema of the handler a `handler` value names (handler-kinds.ts), so the
 * configuration is checked whole at load time (the handlers check again when they are built).
 * `module:` handlers own their options.
 */
export function handlerOptionsSchema(handler: unknown): z.ZodType | null {
  if (typeof handler !== 'string') return null;
  return handlerKindOf(handler)?.kind.optionsSchema ?? null;
}
