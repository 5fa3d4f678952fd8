import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { z } from 'zod';
import { BUS_CREDENTIAL_KEYS } from '../../services/core/config/bus-schema.ts';
import { byteSize, durationMs, formatDuration, formatSize } from '../../services/core/config/duration.ts';
import {
  DEFAULT_HANDLER,
  NAMED_HANDLERS,
  PREFIXED_HANDLERS,
} from '../../services/core/config/handler-kinds.ts';
import { handlerOptionsSchema } from '../../services/core/config/handler-options.ts';
import { configSchema } from '../../services/core/config/schema.ts';
import {
  LITERAL_SECRET_QUERY_SOURCE,
  SECRET_HEADER_VALUE_SOURCE,
  SECRET_NAME_SOURCE,
  SECRET_REFERENCE_SOURCE,
} from '../../services/core/config/secret-literals.ts';
import { ROOT } from '../support/process.ts';
import { DURATION_GRAMMAR, durationPattern, SIZE_GRAMMAR, sizePattern } from './schema-patterns.ts';

// The `config` part of the chart's values.schema.json is generated from hookgate's own config
// schema (services/core/config/schema.ts), so `helm install` refuses what hookgate would refuse
// at start wherever JSON Schema can say it: unknown keys, types, numeric bounds, the bounds of
// durations and sizes (as patterns over their text), and the rules that span keys (below). What
// it cannot say (e.g. server.maxBufferedBytes >= server.bodyLimit, both sizes with units) the
// migration hook's `hookgate migrate --check-config` still refuses, with hookgate's message.
// The rest of values.schema.json is written by hand. Regenerate with
//   node test/chart/values-schema.ts --write
export const SCHEMA = join(ROOT, 'charts/hookgate/values.schema.json');

/** Signing secrets in the ConfigMap must be ${NAME} references to keys of the Secret. */
export const SECRET_REFERENCE = '^\\$\\{[A-Za-z_][A-Za-z0-9_]*\\}$';

type Json = { [key: string]: unknown };

function strip(node: unknown): unknown {
  if (Array.isArray(node)) return node.map(strip);
  if (node === null || typeof node !== 'object') return node;
  const out: Json = {};
  for (const [key, value] of Object.entries(node as Json)) {
    // Helm does not apply schema defaults; the chart's values.yaml and hookgate hold them.
    if (key === 'default' || key === '$schema') continue;
    out[key] = strip(value);
  }
  return out;
}

interface Bounds {
  readonly min: number | null;
  readonly max: number | null;
}

/** The bounds a pipe's number stage puts on a duration's or size's value, if any. */
function boundsOf(out: z.core.$ZodType): Bounds {
  const number = out as unknown as { minValue?: number | null; maxValue?: number | null };
  return { min: number.minValue ?? null, max: number.maxValue ?? null };
}

/** Durations and sizes are text to JSON Schema: their grammar and bounds become patterns. */
function textBounds(ctx: { zodSchema: z.core.$ZodType; jsonSchema: z.core.JSONSchema.BaseSchema }): void {
  const schema = ctx.zodSchema;
  const json = ctx.jsonSchema as Json;
  const def = schema._zod.def as { type: string; in?: unknown; out?: z.core.$ZodType };
  const piped = def.type === 'pipe' ? def.in : undefined;
  if (schema === durationMs || piped === durationMs) {
    const { min, max } = piped ? boundsOf(def.out as z.core.$ZodType) : { min: null, max: null };
    if (max === null) {
      Object.assign(json, {
        pattern: DURATION_GRAMMAR,
        description: 'a duration: a number and ms, s, m, h or d',
      });
      return;
    }
    const words = `a duration from ${formatDuration(min ?? 0)} to ${formatDuration(max)}`;
    Object.assign(json, {
      pattern: durationPattern(min ?? 0, max, words),
      description: `${words}: a number and ms, s, m, h or d`,
    });
    return;
  }
  if (schema === byteSize || piped === byteSize) {
    const { min, max } = piped ? boundsOf(def.out as z.core.$ZodType) : { min: null, max: null };
    const number =
      max === null
        ? { type: 'integer', exclusiveMinimum: 0 }
        : { type: 'integer', minimum: Math.max(min ?? 1, 1), maximum: max };
    const words = max === null ? '' : `a size from ${formatSize(min ?? 0)} to ${formatSize(max)}`;
    const text =
      max === null
        ? { type: 'string', pattern: SIZE_GRAMMAR }
        : { type: 'string', pattern: sizePattern(min ?? 0, max, words) };
    delete json.type;
    Object.assign(json, {
      anyOf: [number, text],
      description:
        max === null
          ? 'a size: bytes, or a number and b, kb/kib or mb/mib'
          : `${words}: bytes, or a number and b, kb/kib or mb/mib`,
    });
  }
}

function jsonSchemaOf(schema: z.ZodType): Json {
  return strip(
    z.toJSONSchema(schema, { io: 'input', unrepresentable: 'any', target: 'draft-7', override: textBounds }),
  ) as Json;
}

/** The number field at `path` of the config schema: its bounds and default, read from zod. */
function numberField(path: readonly string[]): { min: number; max: number; default: number } {
  let node = configSchema as unknown as z.core.$ZodType;
  let fallback: number | undefined;
  const unwrap = () => {
    for (;;) {
      const def = node._zod.def as { type: string; innerType?: z.core.$ZodType; defaultValue?: unknown };
      if (def.type === 'default' || def.type === 'prefault' || def.type === 'optional') {
        if (def.type === 'default' && typeof def.defaultValue === 'number') fallback = def.defaultValue;
        node = def.innerType as z.core.$ZodType;
      } else return;
    }
  };
  for (const key of path) {
    unwrap();
    node = (node as unknown as { shape: Record<string, z.core.$ZodType> }).shape[key] as z.core.$ZodType;
  }
  unwrap();
  const { min, max } = boundsOf(node);
  if (min === null || max === null || fallback === undefined)
    throw new Error(`${path.join('.')} is no bounded number`);
  return { min, max, default: fallback };
}

const has = (key: string, schema: Json): Json => ({ properties: { [key]: schema }, required: [key] });

/** JSON Schema's if/then/else (an object with `then`, which is not a promise here). */
function when(condition: Json, then: Json, otherwise?: Json): Json {
  const rule: Json = { if: condition, then };
  if (otherwise) rule.else = otherwise;
  return rule;
}

/**
 * `below` < `above`, where both are integers with defaults: for each value `below` can take,
 * `above` must be larger (and, when its default is not, must be set). JSON Schema cannot
 * compare two values, so the rule is spelled out per value of `below`; the error names `above`
 * ("minimum: got 2, want 5"). hookgate: `claim.concurrency` below `database.poolSize`.
 */
function lessThan(below: readonly [string, string], above: readonly [string, string]): Json[] {
  const low = numberField(below);
  const high = numberField(above);
  const [belowSection, belowKey] = below;
  const [aboveSection, aboveKey] = above;
  const rules: Json[] = [];
  for (let value = low.min; value <= low.max; value += 1) {
    if (value < high.min) continue;
    const condition =
      value === low.default
        ? { not: has(belowSection, has(belowKey, { not: { const: value } })) }
        : has(belowSection, has(belowKey, { const: value }));
    const then =
      value < high.default
        ? { properties: { [aboveSection]: { properties: { [aboveKey]: { minimum: value + 1 } } } } }
        : has(aboveSection, has(aboveKey, { minimum: value + 1 }));
    rules.push(when(condition, then));
  }
  return rules;
}

/** The handler's option schema, applied when the endpoint names that handler. */
function handlerOptionRules(): Json[] {
  const handlers = [
    // The default handler's rules also hold for an endpoint that names none.
    ...Object.keys(NAMED_HANDLERS).map((name) => ({
      condition:
        name === DEFAULT_HANDLER
          ? { properties: { handler: { const: name } } }
          : has('handler', { const: name }),
      name,
    })),
    ...Object.entries(PREFIXED_HANDLERS)
      .filter(([, kind]) => kind.optionsSchema !== null)
      .map(([prefix]) => ({
        condition: has('handler', { type: 'string', pattern: `^${prefix}` }),
        name: `${prefix}SELECT 1`,
      })),
  ];
  return handlers.map(({ condition, name }) => {
    const options = handlerOptionsSchema(name);
    if (!options) throw new Error(`no option schema for ${name}`);
    // Options are optional as a whole (default {}), so a required option needs the key too.
    const json = jsonSchemaOf(options);
    const required = Array.isArray(json.required) && json.required.length > 0;
    return when(condition, required ? has('options', json) : { properties: { options: json } });
  });
}

/** The endpoint rules of schema.ts's superRefine that JSON Schema can say. */
function endpointRules(): Json[] {
  return [
    // hmac: required with provider hmac, refused otherwise.
    when(
      { properties: { provider: { const: 'hmac' } } },
      {
        required: ['hmac'],
        // hmac endpoints need hmac.eventIdHeader or extract.eventId to find the event id.
        anyOf: [
          { properties: { hmac: { required: ['eventIdHeader'] } } },
          has('extract', { required: ['eventId'] }),
        ],
      },
      { not: { required: ['hmac'] } },
    ),
    // replay: stripe and github only; github needs repository and hookId.
    when({ required: ['replay'] }, { properties: { provider: { enum: ['stripe', 'github'] } } }),
    when(
      { properties: { provider: { const: 'github' } }, required: ['replay'] },
      { properties: { replay: { required: ['repository', 'hookId'] } } },
    ),
    // dedupe: observe only with mode async (sync applies inside the request).
    when(has('dedupe', { const: 'observe' }), { properties: { mode: { not: { const: 'sync' } } } }),
    ...handlerOptionRules(),
  ];
}

/**
 * A destination's secrets: the rule hookgate applies when it loads its configuration
 * (services/core/config/secret-literals.ts), from the same patterns.
 */
function destinationSecrets(destinations: Json): void {
  const properties = (destinations.additionalProperties as Json).properties as Json;
  const words = 'a reference, ${NAME} (a key of the Secret) or ${file:/path}, never a literal secret';
  ((properties.signing as Json).properties as Json).secrets = {
    ...(((properties.signing as Json).properties as Json).secrets as Json),
    items: { type: 'string', pattern: SECRET_REFERENCE_SOURCE, description: words },
  };
  const headers = properties.headers as Json;
  headers.patternProperties = {
    [SECRET_NAME_SOURCE]: {
      ...(headers.additionalProperties as Json),
      pattern: SECRET_HEADER_VALUE_SOURCE,
      description: `a header named like a secret (authorization, token, key, secret, password): ${words}, after its scheme if it has one ("Bearer \${TOKEN}")`,
    },
  };
  // A message broker's credentials, each a field of its own.
  for (const bus of ['nats', 'rabbitmq']) {
    const fields = (properties[bus] as Json).properties as Json;
    for (const key of BUS_CREDENTIAL_KEYS) {
      if (fields[key] === undefined) continue;
      fields[key] = { ...(fields[key] as Json), pattern: SECRET_REFERENCE_SOURCE, description: words };
    }
  }
  properties.url = {
    ...(properties.url as Json),
    not: { pattern: LITERAL_SECRET_QUERY_SOURCE },
    description: `the http(s) URL to deliver to; a query parameter named like a secret takes ${words}`,
  };
}

export function configValuesSchema(): Json {
  const generated = jsonSchemaOf(configSchema);
  const endpoints = (generated.properties as Json).endpoints as Json;
  const endpoint = endpoints.additionalProperties as Json;
  const secrets = (endpoint.properties as Json).secrets as Json;
  // hookgate's handler regex has the dotAll flag (an `sql:` statement may span lines), which a
  // JSON Schema pattern cannot carry: spell it out.
  const handler = (endpoint.properties as Json).handler as Json;
  handler.pattern = String(handler.pattern).replaceAll('.+', '[\\s\\S]+');
  secrets.items = {
    type: 'string',
    pattern: SECRET_REFERENCE,
    description: 'a ${NAME} reference to a key of the Secret, never a literal secret',
  };
  // Replay secrets stand in for a signature: like signing secrets, they come from the Secret.
  ((endpoint.properties as Json).replaySecrets as Json).items = {
    type: 'string',
    pattern: SECRET_REFERENCE,
    description: 'a ${NAME} reference to a key of the Secret, never a literal secret',
  };
  destinationSecrets((endpoint.properties as Json).destinations as Json);
  // No minProperties: the chart ships no endpoint, and its render-time check (hookgate.validate)
  // refuses an empty map with a sentence saying what to write, where the schema would only say
  // "minProperties".
  endpoint.allOf = endpointRules();
  // The console's session key and password hashes, like signing secrets, come from the Secret.
  const consoleSection = (generated.properties as Json).console as Json;
  const consoleProperties = consoleSection.properties as Json;
  consoleProperties.sessionSecret = {
    type: 'string',
    pattern: SECRET_REFERENCE,
    description:
      'a ${NAME} reference to a key of the Secret (or leave it out: CONSOLE_SESSION_SECRET), never a literal',
  };
  const user = ((consoleProperties.users as Json).items as Json).properties as Json;
  user.passwordHash = {
    type: 'string',
    pattern: SECRET_REFERENCE,
    description: 'a ${NAME} reference to a key of the Secret holding the hash (or use console.usersSecret)',
  };
  return {
    description:
      "hookgate's configuration file (docs/configuration.md), generated from services/core/config/schema.ts",
    ...generated,
    allOf: lessThan(['claim', 'concurrency'], ['database', 'poolSize']),
  };
}

export function readSchema(): Json {
  return JSON.parse(readFileSync(SCHEMA, 'utf8')) as Json;
}

if (process.argv[2] === '--write') {
  const schema = readSchema();
  (schema.properties as Json).config = configValuesSchema();
  writeFileSync(SCHEMA, `${JSON.stringify(schema, null, 2)}\n`);
}
