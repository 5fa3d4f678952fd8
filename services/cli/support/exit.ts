import { CommanderError } from 'commander';
import { ZodError } from 'zod';
import { describeError, HookgateError } from '../../core/errors.ts';

/** Exit codes every command shares: scripts and on-call runbooks rely on them. */
export const EXIT_OK = 0;
/** Something operational failed: the database is down, a check failed, a gateway refused. */
export const EXIT_FAILURE = 1;
/** The command was used wrongly: a flag, a value, an endpoint, or there was nothing to do. */
export const EXIT_USAGE = 2;

/** Codes that mean "the command line (or the configuration it names) is wrong": exit 2. */
const USAGE_CODES = new Set([
  'usage_invalid',
  'endpoint_unknown',
  'event_unknown',
  'config_invalid',
  'config_unreadable',
  'env_invalid',
  'database_url_invalid',
  'database_missing',
  // A pooler lending sessions per transaction: retrying cannot change it (docs/kubernetes.md).
  'database_pooling_unsupported',
  // A PostgreSQL older than hookgate supports (services/core/db/server-checks.ts).
  'database_version_unsupported',
  'credentials_missing',
  // verify's --sent file: the input the command was given is wrong.
  'sent_file_invalid',
  'sent_file_unreadable',
  'sent_file_empty',
  'nothing_changed',
]);

/** Flags as typed (`eventId` → `--event-id`), for usage errors coming from option schemas. */
function flag(path: readonly PropertyKey[]): string {
  return path.map((key) => String(key).replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`)).join('.');
}

/** The host and port of a connection string, never its user or password. */
export function databaseHost(url: string | undefined): string {
  if (!url) return 'the embedded PostgreSQL';
  try {
    const parsed = new URL(url);
    const host = parsed.hostname || parsed.searchParams.get('host') || 'localhost';
    return `${host}:${parsed.port || '5432'}`;
  } catch {
    return '(unparsable DATABASE_URL)';
  }
}

interface SystemError {
  readonly code?: unknown;
  readonly syscall?: unknown;
  readonly address?: unknown;
  readonly port?: unknown;
  readonly hostname?: unknown;
}

function systemCode(error: unknown): string {
  let current: unknown = error;
  for (let depth = 0; depth < 5 && current; depth += 1) {
    const code = (current as SystemError).code;
    if (typeof code === 'string' && /^E[A-Z]+$/.test(code)) return code;
    // AggregateError (happy eyeballs) carries the real errors inside.
    const inner = (current as { errors?: unknown[] }).errors;
    if (Array.isArray(inner) && inner.length > 0) current = inner[0];
    else current = (current as { cause?: unknown }).cause;
  }
  return '';
}

const CONNECTION_CODES = new Set([
  'ECONNREFUSED',
  'ENOTFOUND',
  'EAI_AGAIN',
  'ETIMEDOUT',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'ECONNRESET',
]);

/**
 * Turns whatever ended a command into one coded line and an exit code. Raw stacks are only
 * printed for errors nobody anticipated (a bug), so that they can be reported.
 */
export function classify(
  error: unknown,
  env: NodeJS.ProcessEnv = process.env,
): { line: string; exitCode: number; stack?: string } {
  if (error instanceof ZodError) {
    const lines = error.issues.map((issue) => `--${flag(issue.path)}: ${issue.message}`);
    return { line: `usage_invalid: ${lines.join('; ')}`, exitCode: EXIT_USAGE };
  }
  if (error instanceof HookgateError) {
    return {
      line: describeError(error),
      exitCode: USAGE_CODES.has(error.code) ? EXIT_USAGE : EXIT_FAILURE,
    };
  }
  if (error instanceof CommanderError) {
    return { line: `usage_invalid: ${error.message.replace(/^error: /, '')}`, exitCode: EXIT_USAGE };
  }
  const code = systemCode(error);
  if (code === 'EADDRINUSE') {
    const { address, port } = error as SystemError;
    return {
      line: `port_in_use: ${String(address ?? '')}:${String(port ?? '')} is already in use by another process (PORT / METRICS_PORT choose the ports).`,
      exitCode: EXIT_FAILURE,
    };
  }
  if (CONNECTION_CODES.has(code)) {
    return {
      line: `database_unreachable: cannot reach PostgreSQL at ${databaseHost(env.DATABASE_URL)} (${code}).`,
      exitCode: EXIT_FAILURE,
    };
  }
  const message = error instanceof Error ? error.message : String(error);
  if (/password authentication failed|does not exist|no pg_hba/.test(message)) {
    return {
      line: `database_refused: PostgreSQL at ${databaseHost(env.DATABASE_URL)} refused the connection: ${message}.`,
      exitCode: EXIT_FAILURE,
    };
  }
  return {
    line: `internal_error: ${message}`,
    exitCode: EXIT_FAILURE,
    ...(error instanceof Error && error.stack ? { stack: error.stack } : {}),
  };
}
