import { z } from 'zod';
import { HookgateError } from '../errors.ts';
import type { HandlerDeps } from './index.ts';
import type { Handler } from './types.ts';

const optionsSchema = z.strictObject({});

/** The inbox row is the product: applying an event only settles it as `processed`. */
export function createRecordHandler(options: unknown, deps: HandlerDeps): Handler {
  const parsed = optionsSchema.safeParse(options ?? {});
  if (!parsed.success) {
    throw new HookgateError(
      'handler_options_invalid',
      `endpoints.${deps.endpoint}.options: the record handler takes no options.`,
    );
  }
  return {
    name: 'record',
    async apply() {
      return 'processed';
    },
  };
}
