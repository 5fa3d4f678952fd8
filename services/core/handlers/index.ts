import { HANDLER_CHOICES, handlerKindOf } from '../config/handler-kinds.ts';
import { HookgateError } from '../errors.ts';
import type { Logger } from '../logging.ts';
import { HANDLER_BUILDERS } from './registry.ts';
import type { Handler } from './types.ts';

export interface HandlerDeps {
  readonly endpoint: string;
  readonly logger: Logger;
  /** Directory of the config file: `module:` paths are resolved against it. */
  readonly configDir: string;
}

/**
 * Builds an endpoint's handler from its `handler` spec and `options` (config/handler-kinds.ts says which
 * specs exist, registry.ts what builds each). Each factory validates its own options with a schema and throws a HookgateError
 * naming the bad option. Whatever the handler, test events (`hookgate.test`) never reach it: the
 * engine settles them (test-event.ts).
 */
export async function createHandler(spec: string, options: unknown, deps: HandlerDeps): Promise<Handler> {
  const found = handlerKindOf(spec);
  if (!found) {
    throw new HookgateError(
      'handler_spec_invalid',
      `${deps.endpoint}.handler: ${JSON.stringify(spec)} must be ${HANDLER_CHOICES}`,
    );
  }
  return HANDLER_BUILDERS[found.name](found.argument, options, deps);
}
