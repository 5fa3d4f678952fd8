import type { z } from 'zod';
import {
  billingOptionsSchema,
  projectOptionsSchema,
  recordOptionsSchema,
  sqlOptionsSchema,
} from './handlers-schema.ts';

// Every handler an endpoint can name, once: the schema of its options and the destinations they
// route to. The configuration's checks (schema.ts), the chart's values schema and createHandler
// all read this table; what builds each is beside it in handlers/registry.ts, under the same name.

interface HandlerKind {
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
export const NAMED_HANDLERS = {
  record: {
    optionsSchema: recordOptionsSchema,
    routesTo: routesNowhere,
  },
  project: {
    optionsSchema: projectOptionsSchema,
    routesTo: routesNowhere,
  },
  billing: {
    optionsSchema: billingOptionsSchema,
    routesTo: (options): Record<string, string> =>
      typeof options.notify === 'string' ? { notify: options.notify } : {},
  },
} as const satisfies Readonly<Record<string, HandlerKind>>;

/** Handlers named with an argument: `handler: module:./mine.ts`, `handler: sql:INSERT …`. */
export const PREFIXED_HANDLERS = {
  'module:': {
    optionsSchema: null,
    routesTo: 'any',
  },
  'sql:': {
    optionsSchema: sqlOptionsSchema,
    routesTo: routesNowhere,
  },
} as const satisfies Readonly<Record<string, HandlerKind>>;

/** A handler's name in the tables above: `record`, …, or a prefix, `module:` or `sql:`. */
export type HandlerKindName = keyof typeof NAMED_HANDLERS | keyof typeof PREFIXED_HANDLERS;

/** The kind a `handler` value names, with its name and argument; null when it names none. */
export function handlerKindOf(
  spec: string,
): { name: HandlerKindName; kind: HandlerKind; argument: string } | null {
  if (Object.hasOwn(NAMED_HANDLERS, spec)) {
    const name = spec as keyof typeof NAMED_HANDLERS;
    return { name, kind: NAMED_HANDLERS[name], argument: '' };
  }
  for (const [prefix, kind] of Object.entries(PREFIXED_HANDLERS)) {
    if (spec.startsWith(prefix) && spec.length > prefix.length)
      return { name: prefix as keyof typeof PREFIXED_HANDLERS, kind, argument: spec.slice(prefix.length) };
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
