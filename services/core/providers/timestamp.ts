import { reject } from './rejection.ts';
import { parseRfc3339 } from './rfc3339.ts';
import type { Rejection } from './types.ts';

export type ParsedTimestamp = { readonly ok: true; readonly seconds: number } | Rejection;

/** How a scheme writes its timestamp. */
export type TimestampUnit = 'seconds' | 'milliseconds' | 'rfc3339';

/** A timestamp as read: `value` in `unit`s since the epoch (seconds for rfc3339). */
export type ParsedInstant =
  | { readonly ok: true; readonly value: number; readonly unit: 'seconds' | 'milliseconds' }
  | Rejection;

// 12 digits reach year 33658; longer is garbage and could overflow a safe integer.
const UNIX_SECONDS = /^[0-9]{1,12}$/;
const UNIX_MILLISECONDS = /^[0-9]{1,15}$/;

/** Parses unix seconds strictly: `Number()` would accept `1e9`, ` 12`, `0x10` and friends. */
export function parseUnixSeconds(raw: string | undefined, source: string): ParsedTimestamp {
  if (raw === undefined) return reject('timestamp_missing', `The request has no ${source}.`);
  if (!UNIX_SECONDS.test(raw)) {
    return reject('timestamp_invalid', `The ${source} is not a whole number of unix seconds.`);
  }
  return { ok: true, seconds: Number(raw) };
}

/** Parses a timestamp in a scheme's unit; `source` names it in the rejection. */
export function parseTimestamp(raw: unknown, unit: TimestampUnit, source: string): ParsedInstant {
  if (raw === undefined || raw === null || raw === '')
    return reject('timestamp_missing', `The request has no ${source}.`);
  // A JSON number (Linear's body timestamp) is read as its decimal digits.
  const text = typeof raw === 'number' && Number.isSafeInteger(raw) && raw >= 0 ? String(raw) : raw;
  if (typeof text !== 'string') return reject('timestamp_invalid', `The ${source} is not a timestamp.`);
  if (unit === 'seconds') {
    if (!UNIX_SECONDS.test(text))
      return reject('timestamp_invalid', `The ${source} is not a whole number of unix seconds.`);
    return { ok: true, value: Number(text), unit: 'seconds' };
  }
  if (unit === 'milliseconds') {
    if (!UNIX_MILLISECONDS.test(text))
      return reject('timestamp_invalid', `The ${source} is not a whole number of unix milliseconds.`);
    return { ok: true, value: Number(text), unit: 'milliseconds' };
  }
  // Whole seconds (Twitch, Box, Zendesk): the fraction is dropped, as the providers' own checks
  // compare whole seconds.
  const instant = parseRfc3339(text, { spaceSeparator: false });
  if (instant === null) return reject('timestamp_invalid', `The ${source} is not an RFC 3339 date-time.`);
  return { ok: true, value: instant.seconds, unit: 'seconds' };
}

/** `300`, `1.5`: a number of seconds as a person reads it. */
function formatSeconds(seconds: number): string {
  return Number.isInteger(seconds) ? String(seconds) : String(Math.round(seconds * 1000) / 1000);
}

function outOfTolerance(skewSeconds: number, toleranceSeconds: number, source: string): Rejection {
  const direction = skewSeconds < 0 ? 'older' : 'newer';
  return reject(
    'timestamp_out_of_tolerance',
    `The ${source} is ${formatSeconds(Math.abs(skewSeconds))} s ${direction} than the clock, beyond the ${formatSeconds(toleranceSeconds)} s tolerance.`,
  );
}

/**
 * Refuses timestamps too far from the clock in either direction: too old bounds replay, too
 * new stops a captured signature with a future timestamp from being replayable for longer.
 *
 * Compared in whole seconds, as the official libraries compare (Standard Webhooks, Stripe,
 * Slack's Bolt floor the clock to seconds): a timestamp exactly `tolerance` seconds old is
 * accepted whatever the clock's milliseconds, and a refusal always names a skew beyond it.
 */
export function checkTolerance(
  seconds: number,
  nowMs: number,
  toleranceSeconds: number,
  source: string,
): Rejection | null {
  const skew = seconds - Math.floor(nowMs / 1000);
  if (Math.abs(skew) <= toleranceSeconds) return null;
  return outOfTolerance(skew, toleranceSeconds, source);
}

/** The same for a millisecond timestamp (HubSpot, Linear), whose libraries compare milliseconds. */
export function checkToleranceMs(
  milliseconds: number,
  nowMs: number,
  toleranceSeconds: number,
  source: string,
): Rejection | null {
  const skewMs = milliseconds - nowMs;
  if (Math.abs(skewMs) <= toleranceSeconds * 1000) return null;
  return outOfTolerance(skewMs / 1000, toleranceSeconds, source);
}

/** Either of the two, by the parsed timestamp's unit. */
export function checkInstant(
  instant: { readonly value: number; readonly unit: 'seconds' | 'milliseconds' },
  nowMs: number,
  toleranceSeconds: number,
  source: string,
): Rejection | null {
  return instant.unit === 'seconds'
    ? checkTolerance(instant.value, nowMs, toleranceSeconds, source)
    : checkToleranceMs(instant.value, nowMs, toleranceSeconds, source);
}
