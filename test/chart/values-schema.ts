import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { z } from 'zod';
import { configSchema } from '../../services/core/config/schema.ts';
import { ROOT } from '../support/process.ts';

// The `config` part of the chart's values.schema.json is generated from hookgate's own config
// schema (services/core/config/schema.ts), so `helm install` refuses what hookgate would refuse
// at start (unknown keys, types, numeric bounds), and cannot drift from it: a test compares them.
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

export function configValuesSchema(): Json {
  const generated = strip(
    z.toJSONSchema(configSchema, { io: 'input', unrepresentable: 'any', target: 'draft-7' }),
  ) as Json;
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
  return {
    description:
      "hookgate's configuration file (docs/configuration.md), generated from services/core/config/schema.ts",
    ...generated,
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
