import { reject } from './rejection.ts';
import type { Rejection } from './types.ts';

export type VersionResult = { readonly ok: true; readonly version: string } | Rejection;

const BIGINT_MAX = 9223372036854775807n;
const DIGITS = /^[0-9]+$/;
const RFC3339 =
  /^(\d{4})-(\d{2})-(\d{2})[Tt ](\d{2}):(\d{2}):(\d{2})(?:\.(\d{1,9}))?(?:([Zz])|([+-])(\d{2}):(\d{2}))$/;

function invalid(where: string, detail: string): Rejection {
  return reject('version_invalid', `The entity version at ${where} ${detail}.`);
}

/** Microseconds since the epoch, exactly: Date.parse would round away the sub-millisecond digits. */
function rfc3339Micros(text: string): bigint | null {
  const m = RFC3339.exec(text);
  if (m === null) return null;
  const [year, month, day, hour, minute, second] = m.slice(1, 7).map(Number) as [
    number,
    number,
    number,
    number,
    number,
    number,
  ];
  // Leap second 60 is refused: it has no epoch representation to order by.
  if (month < 1 || month > 12 || day < 1 || hour > 23 || minute > 59 || second > 59) return null;
  const date = new Date(0);
  // setUTCFullYear, unlike Date.UTC, does not map years 0–99 to 1900–1999.
  date.setUTCFullYear(year, month - 1, day);
  if (date.getUTCMonth() !== month - 1 || date.getUTCDate() !== day) return null;
  date.setUTCHours(hour, minute, second, 0);
  // Nanosecond digits are truncated: refusing them would refuse every event from such a sender.
  const fraction = BigInt((m[7] ?? '').slice(0, 6).padEnd(6, '0'));
  let offsetMinutes = 0;
  if (m[8] === undefined) {
    const offsetHours = Number(m[10]);
    const offsetMins = Number(m[11]);
    if (offsetHours > 23 || offsetMins > 59) return null;
    offsetMinutes = (m[9] === '-' ? -1 : 1) * (offsetHours * 60 + offsetMins);
  }
  // Local time = UTC + offset, so UTC = local - offset.
  return BigInt(date.getTime()) * 1000n + fraction - BigInt(offsetMinutes) * 60_000_000n;
}

/**
 * Normalises a version to a decimal integer string that PostgreSQL can cast to `bigint` and
 * order: integers stay themselves, RFC 3339 timestamps become microseconds since the epoch.
 * `where` names the source for the rejection message.
 */
export function normaliseVersion(value: unknown, where: string): VersionResult {
  if (typeof value === 'number') {
    // A number beyond 2^53 was already rounded by JSON.parse; ordering by it would be a guess.
    if (!Number.isSafeInteger(value)) return invalid(where, 'is a number that is not an exact integer');
    return { ok: true, version: String(value) };
  }
  if (typeof value !== 'string') return invalid(where, 'is neither an integer nor an RFC 3339 timestamp');
  if (DIGITS.test(value)) {
    const n = BigInt(value);
    if (n > BIGINT_MAX) return invalid(where, 'does not fit in a 64-bit integer');
    return { ok: true, version: n.toString() };
  }
  const micros = rfc3339Micros(value);
  if (micros === null) {
    return invalid(where, 'is neither an integer nor an RFC 3339 timestamp');
  }
  return { ok: true, version: micros.toString() };
}

// Versions normalised from timestamps are microseconds since the epoch; an integer version that
// large is implausible, so one in this century's range is also shown as the time it encodes.
const MICROS_2000 = 946_684_800_000_000n;
const MICROS_2100 = 4_102_444_800_000_000n;

/** `v42`, or `v1796414700000000 (2026-12-04T20:05:00Z)` for a version read from a timestamp. */
export function describeVersion(version: string): string {
  if (!/^\d{1,19}$/.test(version)) return `v${version}`;
  const micros = BigInt(version);
  if (micros < MICROS_2000 || micros >= MICROS_2100) return `v${version}`;
  const date = new Date(Number(micros / 1000n));
  const fraction = micros % 1_000_000n === 0n ? '' : `.${String(micros % 1_000_000n).padStart(6, '0')}`;
  return `v${version} (${date.toISOString().slice(0, 19)}${fraction}Z)`;
}
