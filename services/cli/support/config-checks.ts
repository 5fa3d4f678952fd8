import { readFileSync } from 'node:fs';
import { parse } from 'yaml';
import { demoSecretPaths } from '../../core/config/demo-secrets.ts';
import { REFERENCE } from '../../core/config/interpolate.ts';
import { loadConfig } from '../../core/config/load.ts';
import type { Config } from '../../core/config/schema.ts';
import { HookgateError } from '../../core/errors.ts';
import { checkDatabaseUrl } from '../database.ts';

/**
 * The example config's fallback secrets are public. With a real database that is a deployment
 * anyone can send forged events to: refuse. The embedded demo may use them, loudly (serve warns).
 */
export function refuseDemoSecrets(paths: readonly string[], embedded: boolean, file?: string): void {
  if (paths.length === 0 || embedded) return;
  const variables = file === undefined ? [] : demoSecretVariables(file, paths);
  const where = paths
    .map((path, index) => {
      const variable = variables[index];
      return variable ? `${path} (\${${variable}} is unset, so its published fallback was used)` : path;
    })
    .join(', ');
  const named = [...new Set(variables.filter((v): v is string => v !== undefined))];
  const advice =
    named.length > 0
      ? `Set ${named.join(', ')} to each endpoint's real secret${named.length < paths.length ? ', and replace the secrets written in the file' : ''}.`
      : "Set each endpoint's real secret.";
  throw new HookgateError(
    'config_invalid',
    `The configuration uses a published demo secret (from hookgate.example.yaml) at ${where}: anyone can sign deliveries with it. ${advice}`,
  );
}

/**
 * For each demo-secret path (`endpoints.demo.secrets[0]`), the variable its value was read from
 * in the file as written (`${DEMO_WEBHOOK_SECRET:-whsec_…}`), or undefined for a literal: the
 * refusal names what to set for every endpoint, not one example.
 */
function demoSecretVariables(file: string, paths: readonly string[]): (string | undefined)[] {
  let document: unknown;
  try {
    document = parse(readFileSync(file, 'utf8'));
  } catch {
    return [];
  }
  return paths.map((path) => {
    const match = /^endpoints\.(.+)\.secrets\[(\d+)\]$/.exec(path);
    if (!match) return undefined;
    const endpoints = (document as { endpoints?: Record<string, { secrets?: unknown[] }> } | null)?.endpoints;
    const written = endpoints?.[match[1] as string]?.secrets?.[Number(match[2])];
    if (typeof written !== 'string') return undefined;
    for (const reference of written.matchAll(REFERENCE)) if (reference[1] === '') return reference[2];
    return undefined;
  });
}

/**
 * What `serve` refuses at start before it touches the database: the file (schema, bounds, rules
 * across keys, every `${NAME}` set in this environment), a DATABASE_URL that is not a PostgreSQL
 * URL, and published demo secrets with a real database. `hookgate config check` and
 * `hookgate migrate --check-config` (the chart's migration hook) run it, so a configuration
 * that would crash-loop the pods fails before any of them rolls.
 */
export function checkConfiguration(file: string, env: NodeJS.ProcessEnv = process.env): Config {
  checkDatabaseUrl(env);
  const config = loadConfig(file, env);
  refuseDemoSecrets(demoSecretPaths(config), !env.DATABASE_URL?.trim(), file);
  return config;
}
