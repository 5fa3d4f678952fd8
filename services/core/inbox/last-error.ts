import { z } from 'zod';
import type { ErrorCode } from '../error-codes.ts';

/**
 * Why an attempt failed, as the apply engine records it: on the inbox row (`last_error`) and,
 * when a whole batch's transaction failed, in the job's output (pg-boss `fail`). The code decides
 * `parked` or `dead` on the last attempt; the message is for people.
 */
export interface Failure {
  readonly code: string;
  readonly message: string;
  /** Retrying cannot help (EventUnusable): the event is `dead` at once. */
  readonly permanent: boolean;
}

const LAST_ERROR_MAX = 2_000;

/** The code that parks an event that ran out of attempts instead of killing it. */
export const PARKING_CODE: ErrorCode = 'entity_not_yet_known';

/** `code: message`, the code first so operators can match on it. The one place it is built. */
export function lastErrorOf(failure: Pick<Failure, 'code' | 'message'>): string {
  return `${failure.code}: ${failure.message}`.slice(0, LAST_ERROR_MAX);
}

/** What the worker hands pg-boss's `fail` as the job's output. */
export function jobOutputOf(failure: Failure): { code: string; message: string } {
  return { code: failure.code, message: failure.message };
}

const outputSchema = z.looseObject({ code: z.string().min(1), message: z.string() });

/**
 * The failure a job's last output reports, or null when the attempt never reported one (pg-boss
 * expired it: the process died or stalled).
 */
export function failureFromOutput(output: unknown): Pick<Failure, 'code' | 'message'> | null {
  const parsed = outputSchema.safeParse(output);
  return parsed.success ? { code: parsed.data.code, message: parsed.data.message } : null;
}
