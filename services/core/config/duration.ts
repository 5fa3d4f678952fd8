import { z } from 'zod';

const UNIT_MS = { ms: 1, s: 1_000, m: 60_000, h: 3_600_000, d: 86_400_000 } as const;
const DURATION = /^(\d+(?:\.\d+)?)(ms|s|m|h|d)$/;

/** Parses `250ms`, `10s`, `5m`, `1h`, `30d` into milliseconds; anything else is undefined. */
export function parseDuration(text: string): number | undefined {
  const match = DURATION.exec(text.trim());
  if (!match) return undefined;
  const [, amount, unit] = match;
  return Number(amount) * UNIT_MS[unit as keyof typeof UNIT_MS];
}

const EARLIEST_MS = Date.parse('0001-01-01T00:00:00.000Z');
const LATEST_MS = Date.parse('9999-12-31T23:59:59.999Z');

/**
 * Whether an instant (epoch milliseconds) is one a user may name in a filter: from 0001-01-01 to
 * 9999-12-31 UTC, inside both JavaScript's Date and PostgreSQL's timestamptz (`--since 99999999999d`
 * is neither, and reached PostgreSQL as an invalid date).
 */
export function nameableInstant(ms: number): boolean {
  return Number.isFinite(ms) && ms >= EARLIEST_MS && ms <= LATEST_MS;
}

/** A config duration: a string such as `5m`, validated and converted to milliseconds. */
export const durationMs = z.string().transform((text, ctx) => {
  const ms = parseDuration(text);
  if (ms === undefined) {
    ctx.addIssue({
      code: 'custom',
      message: `"${text}" is not a duration; write a number and a unit, e.g. 250ms, 10s, 5m, 1h or 30d`,
    });
    return z.NEVER;
  }
  return ms;
});

const SIZE_UNITS = { b: 1, kb: 1024, kib: 1024, mb: 1024 ** 2, mib: 1024 ** 2 } as const;
const SIZE = /^(\d+)\s*(b|kb|kib|mb|mib)$/i;

/** A byte size such as `1mib`, `512kb` or a bare number of bytes. */
export const byteSize = z.union([z.number().int().positive(), z.string()]).transform((value, ctx) => {
  if (typeof value === 'number') return value;
  const match = SIZE.exec(value.trim());
  if (!match) {
    ctx.addIssue({ code: 'custom', message: `"${value}" is not a size; write e.g. 1mib, 512kib or 65536` });
    return z.NEVER;
  }
  const [, amount, unit] = match;
  return Number(amount) * SIZE_UNITS[unit!.toLowerCase() as keyof typeof SIZE_UNITS];
});

const DURATION_UNIT = /^\s*\d+(?:\.\d+)?(ms|s|m|h|d)\s*$/;
const SIZE_UNIT = /^\s*\d+\s*(b|kb|kib|mb|mib)\s*$/i;

/**
 * `value` in `unit`, when it is a short figure there: at most 3 decimals, below 1 000 (so 1 000 ms
 * reads 1s and 1 024 KiB 1mib), else undefined.
 */
function exactly(value: number, unit: number): string | undefined {
  const amount = value / unit;
  const rounded = Math.round(amount * 1000) / 1000;
  return Math.abs(rounded * unit - value) < 1e-6 && rounded < 1000 ? String(rounded) : undefined;
}

/**
 * A millisecond figure as a duration, in the unit of `like` (what the user wrote, e.g. `48h`)
 * when it is a short figure there (`24h`), else in the largest unit it is whole in (`130s`).
 */
export function formatDuration(ms: number, like?: string): string {
  const unit = like === undefined ? undefined : DURATION_UNIT.exec(like)?.[1];
  if (unit) {
    const amount = exactly(ms, UNIT_MS[unit as keyof typeof UNIT_MS]);
    if (amount !== undefined) return `${amount}${unit}`;
  }
  for (const name of ['d', 'h', 'm', 's'] as const) {
    if (ms >= UNIT_MS[name] && ms % UNIT_MS[name] === 0) return `${ms / UNIT_MS[name]}${name}`;
  }
  return `${ms}ms`;
}

/** A byte figure in the unit of `like` (`512kib`) when it is short and whole there, else the largest whole unit. */
export function formatSize(bytes: number, like?: string | number): string {
  const unit = typeof like === 'string' ? SIZE_UNIT.exec(like)?.[1]?.toLowerCase() : undefined;
  if (unit) {
    const amount = exactly(bytes, SIZE_UNITS[unit as keyof typeof SIZE_UNITS]);
    if (amount !== undefined && !amount.includes('.')) return `${amount}${unit}`;
  }
  if (bytes >= 1024 ** 2 && bytes % 1024 ** 2 === 0) return `${bytes / 1024 ** 2}mib`;
  if (bytes >= 1024 && bytes % 1024 === 0) return `${bytes / 1024}kib`;
  return `${bytes} bytes`;
}

/** Whether `text` is written as a duration / a size with a unit (for messages). */
export const isDurationText = (text: unknown): text is string =>
  typeof text === 'string' && DURATION_UNIT.test(text);
export const isSizeText = (text: unknown): text is string => typeof text === 'string' && SIZE_UNIT.test(text);
