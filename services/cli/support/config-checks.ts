import { demoSecretPaths } from '../../core/config/demo-secrets.ts';
import { loadConfig } from '../../core/config/load.ts';
import type { Config } from '../../core/config/schema.ts';
import { HookgateError } from '../../core/errors.ts';
import { checkDatabaseUrl } from '../database.ts';

/**
 * The example config's fallback secrets are public. With a real database that is a deployment
 * anyone can send forged events to: refuse. The embedded demo may use them, loudly (serve warns).
 */
export function refuseDemoSecrets(paths: readonly string[], embedded: boolean): void {
  if (paths.length === 0 || embedded) return;
  throw new HookgateError(
    'config_invalid',
    `The configuration uses a published demo secret (from hookgate.example.yaml) at ${paths.join(', ')}: anyone can sign deliveries with it. Set the endpoint's real secret (e.g. DEMO_WEBHOOK_SECRET, STRIPE_WEBHOOK_SECRET).`,
  );
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
  refuseDemoSecrets(demoSecretPaths(config), !env.DATABASE_URL?.trim());
  return config;
}
