import { recordOptionsSchema } from '../config/handlers-schema.ts';
import { parseHandlerOptions } from './handler-options.ts';
import type { HandlerDeps } from './index.ts';
import type { Handler } from './types.ts';

/** The inbox row is the product: applying an event only settles it as `processed`. */
export function createRecordHandler(options: unknown, deps: HandlerDeps): Handler {
  parseHandlerOptions(recordOptionsSchema, options, deps.endpoint);
  return {
    name: 'record',
    async applyBatch(_context, events) {
      return events.map(() => 'processed' as const);
    },
  };
}
