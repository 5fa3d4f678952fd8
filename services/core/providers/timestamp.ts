import { reject } from './rejection.ts';
import type { Rejection } from './types.ts';

export type ParsedTimestamp = { readonly ok: true; readonly seconds: number } | Rejection;

// 12 digits reach year 33658; longer is garbage and could overflow a safe integer.
const UNIX_SECONDS = /^[0-9]{1,12}$/;

/** Parses unix seconds strictly: `Number()` would accept `1e9`, ` 12`, `0x10` and friends. */
export function parseUnixSeconds(raw: string | undefined, source: string): ParsedTimestamp {
  if (raw === undefined) return reject('timestamp_missing', `The request has no ${source}.`);
  if (!UNIX_SECONDS.test(raw)) {
    return reject('timestamp_invalid', `The ${source} is not a whole number of unix seconds.`);
  }
  return { ok: true, seconds: Number(raw) };
}

/**
 * Refuses timestamps too far from the clock in either direction: too old bounds replay, too
 * new stops a captured signature with a future timestamp from being replayable for longer.
 */
export function checkTolerance(
  seconds: number,
  nowMs: number,
  toleranceSeconds: number,
  source: string,
): Rejection | null {
  const skewMs = seconds * 1000 - nowMs;
  if (Math.abs(skewMs) <= toleranceSeconds * 1000) return null;
  const direction = skewMs < 0 ? 'older' : 'newer';
  return reject(
    'timestamp_out_of_tolerance',
    `The ${source} is ${Math.round(Math.abs(skewMs) / 1000)} s ${direction} than the clock, beyond the ${toleranceSeconds} s tolerance.`,
  );
}
