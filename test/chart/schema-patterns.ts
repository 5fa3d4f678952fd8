// JSON Schema patterns for hookgate's durations (`250ms`, `10s`, `1.5h`) and byte sizes (`1mib`,
// `512kb`) within the bounds its config schema sets, for the chart's values.schema.json. JSON
// Schema compares numbers only, so a bound on `tolerance: 48h` can only be said as a pattern over
// the text. The patterns must never refuse what hookgate accepts (hookgate's own check, run by
// the migration hook, reports the rest in the user's units), and they are exact wherever a
// bound is a finite decimal in the unit written: always for whole amounts. They use only what
// both Go's RE2 (Helm) and JavaScript regular expressions understand: no look-around, no flags.

const DURATION_UNITS: readonly (readonly [string, bigint])[] = [
  ['ms', 1n],
  ['s', 1_000n],
  ['m', 60_000n],
  ['h', 3_600_000n],
  ['d', 86_400_000n],
];

/** Digits kept when a bound is not a finite decimal in a unit (1s in minutes); rounded outwards. */
const FRACTION_DIGITS = 6;

/** What hookgate's durationMs accepts (services/core/config/duration.ts), as text. */
export const DURATION_GRAMMAR = '^\\s*\\d+(\\.\\d+)?(ms|s|m|h|d)\\s*$';

const SIZE_UNITS: readonly (readonly [string, bigint])[] = [
  ['[bB]', 1n],
  ['[kK][iI]?[bB]', 1_024n],
  ['[mM][iI]?[bB]', 1_048_576n],
];

/** What hookgate's byteSize accepts as text (b, kb, kib, mb, mib in any case). */
export const SIZE_GRAMMAR = `^\\s*\\d+\\s*(${SIZE_UNITS.map(([unit]) => unit).join('|')})\\s*$`;

const alternatives = (parts: readonly string[]): string =>
  parts.length === 1 ? (parts[0] as string) : `(?:${parts.join('|')})`;

const digitClass = (low: number, high: number): string =>
  low === high ? String(low) : low === 0 && high === 9 ? '\\d' : `[${low}-${high}]`;

const anyDigits = (count: number): string => (count === 0 ? '' : count === 1 ? '\\d' : `\\d{${count}}`);

/** Integers from `low` to `high` written with the same number of digits (as strings). */
function sameLength(low: string, high: string): string {
  if (low === high) return low;
  if (low[0] === high[0]) return `${low[0]}${sameLength(low.slice(1), high.slice(1))}`;
  const rest = low.length - 1;
  const first = Number(low[0]);
  const last = Number(high[0]);
  const parts: string[] = [];
  const lowRestIsZeros = /^0*$/.test(low.slice(1));
  const highRestIsNines = /^9*$/.test(high.slice(1));
  const from = lowRestIsZeros ? first : first + 1;
  const to = highRestIsNines ? last : last - 1;
  if (!lowRestIsZeros) parts.push(`${first}${sameLength(low.slice(1), '9'.repeat(rest))}`);
  if (from <= to) parts.push(`${digitClass(from, to)}${anyDigits(rest)}`);
  if (!highRestIsNines) parts.push(`${last}${sameLength('0'.repeat(rest), high.slice(1))}`);
  return alternatives(parts);
}

/** Integers in [low, high], written without leading zeros. */
export function integerRange(low: bigint, high: bigint): string {
  const parts: string[] = [];
  // Whole lengths (every number of that many digits) merge: [1-9]\d{3,6}.
  let fullFrom = 0;
  let fullTo = 0;
  const flushFull = () => {
    if (fullFrom === 0) return;
    const rest = fullFrom === fullTo ? anyDigits(fullFrom - 1) : `\\d{${fullFrom - 1},${fullTo - 1}}`;
    parts.push(`[1-9]${rest}`);
    fullFrom = 0;
  };
  for (let length = String(low).length; length <= String(high).length; length += 1) {
    const smallest = length === 1 ? 0n : 10n ** BigInt(length - 1);
    const largest = 10n ** BigInt(length) - 1n;
    const from = low > smallest ? low : smallest;
    const to = high < largest ? high : largest;
    if (from > to) continue;
    if (length > 1 && from === smallest && to === largest) {
      if (fullFrom === 0) fullFrom = length;
      fullTo = length;
      continue;
    }
    flushFull();
    parts.push(sameLength(String(from), String(to)));
  }
  flushFull();
  return alternatives(
    parts.flatMap((part) =>
      part.startsWith('(?:') && balanced(part.slice(3, -1)) ? topLevel(part.slice(3, -1)) : [part],
    ),
  );
}

/** Whether a regex fragment's parentheses balance (so `(?:x)` around it can be dropped). */
function balanced(text: string): boolean {
  let depth = 0;
  for (const char of text) {
    if (char === '(') depth += 1;
    if (char === ')') depth -= 1;
    if (depth < 0) return false;
  }
  return depth === 0;
}

/** The top-level alternatives of a fragment. */
function topLevel(text: string): string[] {
  const parts: string[] = [];
  let depth = 0;
  let start = 0;
  for (let index = 0; index < text.length; index += 1) {
    const char = text[index];
    if (char === '(') depth += 1;
    else if (char === ')') depth -= 1;
    else if (char === '|' && depth === 0) {
      parts.push(text.slice(start, index));
      start = index + 1;
    }
  }
  parts.push(text.slice(start));
  return parts;
}

/** The decimal digits of numerator/denominator (< 1), cut to FRACTION_DIGITS, rounded `down` or `up`. */
function fractionDigits(numerator: bigint, denominator: bigint, round: 'down' | 'up'): string | 'one' {
  let digits = '';
  let remainder = numerator;
  // Rounded down, a positive fraction keeps digits up to its first non-zero one, so it stays
  // above zero (and a whole amount just below the bound stays refused).
  while (
    remainder !== 0n &&
    (digits.length < FRACTION_DIGITS || (round === 'down' && !/[1-9]/.test(digits)))
  ) {
    remainder *= 10n;
    digits += String(remainder / denominator);
    remainder %= denominator;
  }
  if (remainder !== 0n && round === 'up') {
    // Round the last kept digit up, carrying leftwards; all nines carry into the integer part.
    const bumped = (BigInt(`1${digits}`) + 1n).toString();
    if (bumped.startsWith('2')) return 'one';
    digits = bumped.slice(1);
  }
  return digits.replace(/0+$/, '');
}

/**
 * Fraction digits (what follows the point) whose value 0.F lies in [0.low, 0.high]; `low` null
 * means no lower bound, `high` null no upper bound (below 1), `high` '' exactly zero. The result
 * matches at least one digit when `first`. null when nothing matches.
 */
function fraction(low: string | null, high: string | null, index = 0, first = true): string | null {
  const lowTight = low !== null && /[1-9]/.test(low.slice(index));
  const highTight = high !== null;
  if (highTight && index >= high.length) {
    // Every further digit must be 0 (the value is at its upper bound).
    return lowTight ? null : first ? '0+' : '0*';
  }
  if (!lowTight && !highTight) return first ? '\\d+' : '\\d*';
  const lowDigit = lowTight ? Number(low[index]) : 0;
  const highDigit = highTight ? Number(high[index]) : 9;
  const parts: string[] = [];
  if (lowDigit === highDigit) {
    const next = fraction(low, high, index + 1, false);
    if (next !== null) parts.push(`${lowDigit}${next}`);
  } else {
    if (lowTight) {
      const next = fraction(low, null, index + 1, false);
      if (next !== null) parts.push(`${lowDigit}${next}`);
    }
    const from = lowTight ? lowDigit + 1 : lowDigit;
    const to = highTight ? highDigit - 1 : highDigit;
    if (from <= to) parts.push(`${digitClass(from, to)}\\d*`);
    if (highTight) {
      const next = fraction(null, high, index + 1, false);
      if (next !== null) parts.push(`${highDigit}${next}`);
    }
  }
  if (parts.length === 0) return null;
  // Stopping here leaves trailing zeros: enough unless the lower bound still needs digits.
  const optional = !first && !lowTight;
  return optional ? `(?:${parts.join('|')})?` : alternatives(parts);
}

/** The optional `.digits` after a whole amount, with 0.F in [0.low, 0.high] (see fraction). */
function fractionPart(low: string | null, high: string | null): string | null {
  const digits = fraction(low, high);
  const zeroAllowed = low === null;
  if (digits === null) return zeroAllowed ? '' : null;
  return zeroAllowed ? `(?:\\.${digits})?` : `\\.${digits}`;
}

const wholeNumber = (value: bigint): string => (value === 0n ? '0+' : `0*${value}`);

/** Decimal amounts (`\d+(\.\d+)?`, leading zeros allowed) in [min/unit, max/unit]. */
export function decimalAmount(min: bigint, max: bigint, unit: bigint): string | null {
  const lowWhole = min / unit;
  const highWhole = max / unit;
  const lowFraction = min % unit === 0n ? null : fractionDigits(min % unit, unit, 'down') || null;
  const upper = max % unit === 0n ? '' : fractionDigits(max % unit, unit, 'up');
  // Rounding up reached the next whole number: the bound becomes that number, exactly.
  const top = upper === 'one' ? highWhole + 1n : highWhole;
  const highFraction = upper === 'one' ? '' : upper;
  const parts: string[] = [];
  if (lowWhole === top) {
    const tail = fractionPart(lowFraction, highFraction);
    if (tail !== null) parts.push(`${wholeNumber(lowWhole)}${tail}`);
  } else {
    let from = lowWhole;
    if (lowFraction !== null) {
      const tail = fractionPart(lowFraction, null);
      if (tail !== null) parts.push(`${wholeNumber(lowWhole)}${tail}`);
      from = lowWhole + 1n;
    }
    if (from <= top - 1n) parts.push(`0*${integerRange(from, top - 1n)}(?:\\.\\d+)?`);
    const tail = fractionPart(null, highFraction);
    if (tail !== null) parts.push(`${wholeNumber(top)}${tail}`);
  }
  return parts.length === 0 ? null : alternatives(parts);
}

/**
 * Validators print the pattern a value failed, not the schema's description, so a bounded
 * pattern opens with its bounds in words, inside a group that can only match the empty string
 * (text after `$` never matches): `^(?:$ from 1s to 24h)?…`. `words` must hold no regex syntax.
 */
export function sayBounds(words: string): string {
  if (!/^[\w .,/-]+$/.test(words)) throw new Error(`"${words}" is not plain words`);
  return `(?:$ ${words} )?`;
}

/** A duration between `minMs` and `maxMs` (inclusive), in any unit hookgate reads. */
export function durationPattern(minMs: number, maxMs: number, words?: string): string {
  const branches = DURATION_UNITS.flatMap(([name, unit]) => {
    const amount = decimalAmount(BigInt(minMs), BigInt(maxMs), unit);
    return amount === null ? [] : [`${amount}${name}`];
  });
  return `^${words ? sayBounds(words) : ''}\\s*(?:${branches.join('|')})\\s*$`;
}

/** A byte size between `min` and `max` (inclusive) written with a unit (whole amounts only). */
export function sizePattern(min: number, max: number, words?: string): string {
  const branches = SIZE_UNITS.flatMap(([name, unit]) => {
    const low = (BigInt(min) + unit - 1n) / unit;
    const high = BigInt(max) / unit;
    return low > high ? [] : [`0*${integerRange(low, high)}\\s*${name}`];
  });
  return `^${words ? sayBounds(words) : ''}\\s*(?:${branches.join('|')})\\s*$`;
}
