import type { HandlerKindName } from '../config/handler-kinds.ts';
import { createBillingHandler } from './billing.ts';
import type { HandlerDeps } from './index.ts';
import { createModuleHandler } from './module.ts';
import { createProjectHandler } from './project.ts';
import { createRecordHandler } from './record.ts';
import { createSqlHandler } from './sql.ts';
import type { Handler } from './types.ts';

// What builds each handler an endpoint can name, by its name in config/handler-kinds.ts (which
// holds its options' schema and routes): adding a handler is one file, one line there and one here.

/** Builds the handler; `argument` is what follows the prefix (`module:<path>`, `sql:<statement>`). */
type Build = (argument: string, options: unknown, deps: HandlerDeps) => Handler | Promise<Handler>;

export const HANDLER_BUILDERS: Readonly<Record<HandlerKindName, Build>> = {
  record: (_, options, deps) => createRecordHandler(options, deps),
  project: (_, options, deps) => createProjectHandler(options, deps),
  billing: (_, options, deps) => createBillingHandler(options, deps),
  'module:': (path, options, deps) => createModuleHandler(path, options, deps),
  'sql:': (statement, options, deps) => createSqlHandler(statement, options, deps),
};
