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
