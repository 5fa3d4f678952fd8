import type { Logger } from '../logging.ts';
import { createBillingHandler } from './billing.ts';
import { createForwardHandler } from './forward.ts';
import { createModuleHandler } from './module.ts';
import { createProjectHandler } from './project.ts';
import { createRecordHandler } from './record.ts';
import { createSqlHandler } from './sql.ts';
import { skippingTestEvents } from './test-event.ts';
import type { Handler } from './types.ts';

export interface HandlerDeps {
  readonly endpoint: string;
  readonly logger: Logger;
  /** Directory of the config file: `module:` paths are resolved against it. */
  readonly configDir: string;
}

/**
 * Builds an endpoint's handler from its `handler` spec and `options`. Each factory validates
 * its own options with a schema and throws a HookgateError naming the bad option. Whatever the
 * handler, test events (`hookgate.test`) settle `ignored` without reaching it (test-event.ts).
 */
export async function createHandler(spec: string, options: unknown, deps: HandlerDeps): Promise<Handler> {
  return skippingTestEvents(await createBareHandler(spec, options, deps));
}

async function createBareHandler(spec: string, options: unknown, deps: HandlerDeps): Promise<Handler> {
  if (spec === 'record') return createRecordHandler(options, deps);
  if (spec === 'project') return createProjectHandler(options, deps);
  if (spec === 'billing') return createBillingHandler(options, deps);
  if (spec === 'forward') return createForwardHandler(options, deps);
  if (spec.startsWith('module:')) return createModuleHandler(spec.slice('module:'.length), options, deps);
  if (spec.startsWith('sql:')) return createSqlHandler(spec.slice('sql:'.length), options, deps);
  throw new Error(`unknown handler spec ${spec}`);
}
