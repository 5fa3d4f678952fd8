import { HookgateError } from '../errors.ts';
import { EventUnusable } from '../handlers/types.ts';
import type { Failure } from '../inbox/last-error.ts';

/** The failure a thrown error makes: its own code, a SQLSTATE, or `handler_error`. */
export function failureOf(error: unknown): Failure {
  let code = 'handler_error';
  if (error instanceof HookgateError) code = error.code;
  else if (error && typeof error === 'object' && typeof (error as { code?: unknown }).code === 'string') {
    const pgCode = (error as { code: string }).code;
    code = /^[0-9A-Z]{5}$/.test(pgCode) ? `sqlstate_${pgCode}` : pgCode;
  }
  const message = error instanceof Error ? error.message : String(error);
  return { code, message, permanent: error instanceof EventUnusable };
}
