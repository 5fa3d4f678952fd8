import type { ErrorCode } from './error-codes.ts';

/**
 * Every error hookgate raises on purpose carries a stable machine code and a sentence a
 * person can act on. Codes are part of the public surface (HTTP bodies, CLI exit output) and are all listed,
 * with their HTTP status and exit code, in error-codes.ts.
 */
export class HookgateError extends Error {
  readonly code: ErrorCode;

  constructor(code: ErrorCode, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'HookgateError';
    this.code = code;
  }
}

export function describeError(error: unknown): string {
  if (error instanceof HookgateError) return `${error.code}: ${error.message}`;
  if (error instanceof Error) return error.message;
  return String(error);
}
