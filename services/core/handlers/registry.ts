import type { z } from 'zod';
import { billingOptionsSchema, createBillingHandler } from './billing.ts';
import type { HandlerDeps } from './index.ts';
import { createModuleHandler } from './module.ts';
import { createProjectHandler, projectOptionsSchema } from './project.ts';
import { createRecordHandler, recordOptionsSchema } from './record.ts';
import { createSqlHandler, sqlOptionsSchema } from './sql.ts';
import type { Handler } from './types.ts';

// Every handler an endpoint can name, once: what builds it and the schema of its options. The
// configuration's checks (config/schema.ts), the chart's values schema and createHandler all read
// this table, so adding a handler is one file and one line here.

interface HandlerKind {
  /** Builds the handler; `argument` is what follows the prefix (`module:<path>`, `sql:<statement>`). */
  readonly create: (argument: string, options: unknown, deps: HandlerDeps) => Handler | Promise<Handler>;
  /** Its options, checked at load; null: the handler owns them (a user's module). */
  readonly optionsSchema: z.ZodType | null;
  /**
   * The destinations its options route events to, by option (`{ notify: 'ledger' }`), checked at
   * load against the endpoint's destinations with `routedBy: handler`; `any`: it may route to any
   * of them (a user's module).
   */
  readonly routesTo:
    | ((options: Readonly<Record<string, unknown>>) => Readonly<Record<string, string>>)
    | 'any';
}

const routesNowhere = () => ({});

/** What an endpoint that names no handler gets: its rows are the product. */
export const DEFAULT_HANDLER = 'record';

/** Named handlers: `handler: record`. */
export const NAMED_HANDLERS: Readonly<Record<string, HandlerKind>> = {
  record: {
    create: (_, options, deps) => createRecordHandler(options, deps),
    optionsSchema: recordOptionsSchema,
    routesTo: routesNowhere,
  },
  project: {
    create: (_, options, deps) => createProjectHandler(options, deps),
    optionsSchema: projectOptionsSchema,
    routesTo: routesNowhere,
  },
  billing: {
    create: (_, options, deps) => createBillingHandler(options, deps),
    optionsSchema: billingOptionsSchema,
    routesTo: (options): Record<string, string> =>
      typeof options.notify === 'string' ? { notify: options.notify } : {},
  },
};

/** Handlers named with an argument: `handler: module:./mine.ts`, `handler: sql:INSERT …`. */
export const PREFIXED_HANDLERS: Readonly<Record<string, HandlerKind>> = {
  'module:': {
    create: (path, options, deps) => createModuleHandler(path, options, deps),
    optionsSchema: null,
    routesTo: 'any',
  },
  'sql:': {
    create: (statement, options, deps) => createSqlHandler(statement, options, deps),
    optionsSchema: sqlOptionsSchema,
    routesTo: routesNowhere,
  },
};

/** The kind a `handler` value names, with its argument; null when it names none. */
export function handlerKindOf(spec: string): { kind: HandlerKind; argument: string } | null {
  const named = Object.hasOwn(NAMED_HANDLERS, spec) ? NAMED_HANDLERS[spec] : undefined;
  if (named) return { kind: named, argument: '' };
  for (const [prefix, kind] of Object.entries(PREFIXED_HANDLERS)) {
    if (spec.startsWith(prefix) && spec.length > prefix.length)
      return { kind, argument: spec.slice(prefix.length) };
  }
  return null;
}

/**
 * The `handler` values there are, as one pattern for the configuration's schema (and from it the
 * chart's): the names, or a prefix and its argument (which may span lines: an `sql:` statement).
 */
export const HANDLER_PATTERN = new RegExp(
  `^(${[...Object.keys(NAMED_HANDLERS), ...Object.keys(PREFIXED_HANDLERS).map((prefix) => `${prefix}.+`)].join('|')})$`,
  's',
);

/** `record, project, billing, module:<path> or sql:<statement>`, for messages. */
export const HANDLER_CHOICES = [
  ...Object.keys(NAMED_HANDLERS),
  ...Object.keys(PREFIXED_HANDLERS).map((prefix) => `${prefix}<${prefix === 'sql:' ? 'statement' : 'path'}>`),
]
  .join(', ')
  .replace(/, ([^,]*)$/, ' or $1');
