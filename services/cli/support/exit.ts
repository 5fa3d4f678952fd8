import { CommanderError } from 'commander';
import { ZodError } from 'zod';
import { exitCodeOf } from '../../core/error-codes.ts';
import { describeError, HookgateError } from '../../core/errors.ts';
import { EXIT_FAILURE, EXIT_USAGE } from './exit-codes.ts';

/** Flags as typed (`eventId` → `--event-id`), for usage errors coming from option schemas. */
function flag(path: readonly PropertyKey[]): string {
  return path.map((key) => String(key).replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`)).join('.');
}

/**
 * One option problem as a sentence about the flag as typed (`--batch must be at most 100000`),
 * never the validator's own wording (`Too big: expected number to be <=100000`). Messages the
 * schemas write themselves start in lower case (or with the value, quoted) and follow the flag.
 */
export function optionSentence(issue: ZodError['issues'][number]): string {
  const name = `--${flag(issue.path)}`;
  if (/^[a-z"]/.test(issue.message)) return `${name} ${issue.message}`;
  switch (issue.code) {
    case 'invalid_type':
      if (/received undefined/.test(issue.message)) return `${name} is required`;
      if (issue.expected === 'int') return `${name} must be a whole number`;
      if (issue.expected === 'number') return `${name} must be a number`;
      return `${name} must be a ${issue.expected}`;
    case 'too_big':
      return issue.origin === 'string'
        ? `${name} must be at most ${issue.maximum} characters`
        : `${name} must be at most ${issue.maximum}`;
    case 'too_small':
      return issue.origin === 'string'
        ? `${name} must not be empty`
        : `${name} must be at least ${issue.minimum}`;
    case 'invalid_value':
      return `${name} must be one of ${issue.values.map(String).join(', ')}`;
    case 'unrecognized_keys':
      return `unknown option${issue.keys.length > 1 ? 's' : ''} ${issue.keys.map((key) => `--${flag([key])}`).join(', ')}`;
    default:
      return `${name}: ${issue.message}`;
  }
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
 * A database that cannot be reached, in the words every command uses (`serve` after waiting
 * database.startupTimeout, one-shot commands at once): where, and the system's reason.
 */
export function databaseUnreachable(error: unknown, url: string | undefined): HookgateError {
  const reason = systemCode(error) || (error instanceof Error ? error.message : String(error));
  return new HookgateError(
    'database_unreachable',
    `cannot reach PostgreSQL at ${databaseHost(url)} (${reason}).`,
    { cause: error },
  );
}

/**
 * Turns whatever ended a command into one coded line and an exit code. Raw stacks are only
 * printed for errors nobody anticipated (a bug), so that they can be reported.
 */
export function classify(
  error: unknown,
  env: NodeJS.ProcessEnv = process.env,
): { line: string; exitCode: number; stack?: string } {
  if (error instanceof ZodError) {
    const sentences = error.issues.map((issue) => optionSentence(issue).replace(/\.$/, ''));
    return { line: `usage_invalid: ${sentences.join('; ')}.`, exitCode: EXIT_USAGE };
  }
  if (error instanceof HookgateError) {
    return {
      line: describeError(error),
      exitCode: exitCodeOf(error.code),
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
    return { line: describeError(databaseUnreachable(error, env.DATABASE_URL)), exitCode: EXIT_FAILURE };
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
