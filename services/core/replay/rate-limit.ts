import { HookgateError } from '../errors.ts';

export interface RateLimited {
  /** How long the API asked to wait, in ms (Retry-After, or until the rate limit resets). */
  readonly waitMs: number;
}

export interface RetryOptions {
  /** Most waits for one request before giving up. */
  readonly attempts?: number;
  /** Longest single wait; an API asking for more is refused rather than waited on for hours. */
  readonly maxWaitMs?: number;
  readonly onWait?: (waitMs: number) => void;
  readonly sleep?: (ms: number) => Promise<void>;
}

/** `Retry-After` in seconds or as an HTTP date; null when absent or unreadable. */
export function retryAfterMs(value: string | null | undefined, now = Date.now()): number | null {
  if (value === null || value === undefined || value.trim() === '') return null;
  const seconds = Number(value);
  if (Number.isFinite(seconds) && seconds >= 0) return seconds * 1000;
  const at = Date.parse(value);
  return Number.isNaN(at) ? null : Math.max(0, at - now);
}

/**
 * Runs `request`, waiting out rate-limit answers (429) as long as the API asks (else with
 * exponential backoff from 1 s), a bounded number of times. `limited` says whether an error
 * was a rate limit and for how long.
 */
export async function withRateLimitRetries<T>(
  what: string,
  request: () => Promise<T>,
  limited: (error: unknown) => RateLimited | null,
  options: RetryOptions = {},
): Promise<T> {
  const attempts = options.attempts ?? 8;
  const maxWaitMs = options.maxWaitMs ?? 120_000;
  const sleep = options.sleep ?? ((ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms)));
  for (let attempt = 1; ; attempt += 1) {
    try {
      return await request();
    } catch (error) {
      const limit = limited(error);
      if (!limit) throw error;
      if (attempt >= attempts) {
        throw new HookgateError(
          'replay_rate_limited',
          `${what} was still rate limited after ${attempts} attempts.`,
          {
            cause: error,
          },
        );
      }
      const waitMs = limit.waitMs > 0 ? limit.waitMs : Math.min(1000 * 2 ** (attempt - 1), 60_000);
      if (waitMs > maxWaitMs) {
        throw new HookgateError(
          'replay_rate_limited',
          `${what} is rate limited for another ${Math.ceil(waitMs / 1000)}s; try again later.`,
          { cause: error },
        );
      }
      options.onWait?.(waitMs);
      await sleep(waitMs);
    }
  }
}
