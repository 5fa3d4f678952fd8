import { STATUS_CODES } from 'node:http';
import type { Response } from 'express';
import { formatDuration } from '../../core/config/duration.ts';
import { ERROR_CODES, type ErrorCode, isErrorCode } from '../../core/error-codes.ts';
import { HookgateError } from '../../core/errors.ts';
import type { Logger } from '../../core/logging.ts';

// The API's errors: application/problem+json (RFC 9457) whose `type` is the error catalogue's code
// (services/core/error-codes.ts) and whose `detail` is the error's sentence. The status is the
// catalogue's `api` one, else its gateway `http` one; a usage error without either is a 400.

export function apiStatusOf(code: ErrorCode): number {
  const meaning: { readonly exit: number; readonly http?: number; readonly api?: number } = ERROR_CODES[code];
  return meaning.api ?? meaning.http ?? (meaning.exit === 2 ? 400 : 500);
}

/** An error the API answers with as it is: its code, its sentence, and headers to send with it. */
export class ApiProblem extends HookgateError {
  readonly headers: Readonly<Record<string, string>>;

  constructor(code: ErrorCode, detail: string, headers: Readonly<Record<string, string>> = {}) {
    super(code, detail);
    this.headers = headers;
  }
}

export interface ProblemBody {
  readonly type: string;
  readonly title: string;
  readonly status: number;
  readonly detail: string;
  readonly instance?: string;
}

export function problemBody(code: ErrorCode, detail: string, instance?: string): ProblemBody {
  const status = apiStatusOf(code);
  return {
    type: code,
    title: STATUS_CODES[status] ?? 'Error',
    status,
    detail,
    ...(instance !== undefined ? { instance } : {}),
  };
}

export function sendProblemBody(
  res: Response,
  body: { readonly status: number },
  headers: Readonly<Record<string, string>> = {},
): void {
  for (const [name, value] of Object.entries(headers)) res.setHeader(name, value);
  res.status(body.status).type('application/problem+json').send(JSON.stringify(body));
}

/**
 * Any error as the problem the API answers: a HookgateError by its code; a statement stopped at
 * console.queryTimeout, or a database that did not answer, as database_unavailable (503); a value
 * PostgreSQL cannot compare (a \u0000 in a search) as usage_invalid; anything else internal_error,
 * logged with its cause (never sent).
 */
export function problemOf(
  error: unknown,
  context: { readonly logger: Logger; readonly queryTimeoutMs: number },
  instance: string,
): { readonly body: ProblemBody; readonly headers: Readonly<Record<string, string>> } {
  if (error instanceof HookgateError && isErrorCode(error.code)) {
    const status = apiStatusOf(error.code);
    if (status >= 500) context.logger.warn({ err: error }, 'api: request failed');
    return {
      body: problemBody(error.code, error.message, instance),
      headers: error instanceof ApiProblem ? error.headers : {},
    };
  }
  const pgCode = (error as { code?: unknown }).code;
  if (pgCode === '57014') {
    return {
      body: problemBody(
        'database_unavailable',
        `The read was stopped after ${formatDuration(context.queryTimeoutMs, '1s')} (console.queryTimeout): narrow it with an endpoint, a status or a time range.`,
        instance,
      ),
      headers: {},
    };
  }
  if (pgCode === '42501') {
    context.logger.warn({ err: error }, "api: the console's database role may not do this");
    return {
      body: problemBody(
        'database_unavailable',
        'The console\'s database role may not do this (docs/console.md, "Database role"): run it with hookgate\'s command instead.',
        instance,
      ),
      headers: {},
    };
  }
  if (typeof pgCode === 'string' && pgCode.startsWith('22')) {
    return {
      body: problemBody(
        'usage_invalid',
        'PostgreSQL cannot compare that value (for example a \\u0000 in an id).',
        instance,
      ),
      headers: {},
    };
  }
  if (typeof pgCode === 'string' || /ECONNREFUSED|ETIMEDOUT|Connection terminated/i.test(String(error))) {
    context.logger.warn({ err: error }, 'api: the database did not answer');
    return {
      body: problemBody('database_unavailable', 'The database did not answer; try again shortly.', instance),
      headers: {},
    };
  }
  context.logger.error({ err: error }, 'api: a request failed');
  return {
    body: problemBody('internal_error', 'Something went wrong; it was logged.', instance),
    headers: {},
  };
}
