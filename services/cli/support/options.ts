import { existsSync } from 'node:fs';
import { z } from 'zod';
import { nameableInstant, parseDuration } from '../../core/config/duration.ts';
import { loadConfig } from '../../core/config/load.ts';
import type { Config } from '../../core/config/schema.ts';
import { didYouMean } from '../../core/config/suggest.ts';
import { HookgateError } from '../../core/errors.ts';

/** `--config` when given, else HOOKGATE_CONFIG, else ./hookgate.yaml. */
export const DEFAULT_CONFIG = 'hookgate.yaml';

export function configPath(given: string | undefined, env: NodeJS.ProcessEnv = process.env): string {
  return given ?? (env.HOOKGATE_CONFIG?.trim() || DEFAULT_CONFIG);
}

/**
 * The configuration a command reads. Named explicitly (flag or HOOKGATE_CONFIG), it must load;
 * the implicit ./hookgate.yaml may be absent for commands that can work from the database alone.
 */
export function commandConfig(given: string | undefined, required: boolean): Config | null {
  const explicit = given !== undefined || Boolean(process.env.HOOKGATE_CONFIG?.trim());
  const file = configPath(given);
  if (!explicit && !required && !existsSync(file)) return null;
  return loadConfig(file);
}

/** Refuses an endpoint the configuration does not define (exit 2), naming those it does. */
export function requireEndpoint(config: Config, endpoint: string): void {
  if (config.endpoints[endpoint]) return;
  const known = Object.keys(config.endpoints);
  throw new HookgateError(
    'endpoint_unknown',
    `No endpoint named "${endpoint}" is configured.${didYouMean(endpoint, known)} Configured: ${known.join(', ')}.`,
  );
}

/** `--since 1h` (that long ago) or an ISO 8601 timestamp; anything else is a usage error. */
export function pointInTime(now: () => number = Date.now) {
  return z.string().transform((text, ctx) => {
    const ms = parseDuration(text);
    if (ms !== undefined) {
      const at = now() - ms;
      if (nameableInstant(at)) return new Date(at);
      ctx.addIssue({
        code: 'custom',
        message: `"${text}" ago is before 0001-01-01, the earliest time hookgate reads: give a shorter duration or a timestamp`,
      });
      return z.NEVER;
    }
    if (/^\d{4}-\d{2}-\d{2}([T ][\d:.]+(Z|[+-]\d{2}:?\d{2})?)?$/.test(text.trim())) {
      const date = new Date(text.trim());
      if (nameableInstant(date.getTime())) return date;
    }
    ctx.addIssue({
      code: 'custom',
      message: `"${text}" is neither a duration (30m, 1h, 2d) nor a timestamp (2026-11-30T14:00:00Z)`,
    });
    return z.NEVER;
  });
}

export const endpointName = z.string().regex(/^[a-z0-9][a-z0-9_-]{0,62}$/, 'is not an endpoint name');
