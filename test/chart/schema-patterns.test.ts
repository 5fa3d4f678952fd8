import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { byteSize, parseDuration } from '../../services/core/config/duration.ts';
import {
  DURATION_GRAMMAR,
  durationPattern,
  integerRange,
  SIZE_GRAMMAR,
  sayBounds,
  sizePattern,
} from './schema-patterns.ts';

const UNIT_MS = { ms: 1n, s: 1_000n, m: 60_000n, h: 3_600_000n, d: 86_400_000n } as const;
type Unit = keyof typeof UNIT_MS;

/** The exact value in ms of `<whole>.<fraction><unit>`, as a fraction n / 10^k (no floating point). */
function exactMs(whole: string, fraction: string, unit: Unit): { n: bigint; d: bigint } {
  const d = 10n ** BigInt(fraction.length);
  return { n: (BigInt(whole) * d + BigInt(fraction || '0')) * UNIT_MS[unit], d };
}

const within = (value: { n: bigint; d: bigint }, min: number, max: number) =>
  value.n >= BigInt(min) * value.d && value.n <= BigInt(max) * value.d;

/** The bounds hookgate's config schema uses for durations (ms), and some awkward ones. */
const DURATION_BOUNDS: readonly [number, number][] = [
  [1_000, 86_400_000],
  [0, 600_000],
  [100, 600_000],
  [0, 1_000],
  [130_000, 86_400_000],
  [3_600_000, 365 * 86_400_000],
  [1_000, 30 * 86_400_000],
  [10_000, 3_600_000],
  [7, 7],
  [1_500, 90_061_001],
];

const amount = fc.record({
  whole: fc.oneof(fc.bigInt({ min: 0n, max: 200n }), fc.bigInt({ min: 0n, max: 10n ** 12n })).map(String),
  zeros: fc.integer({ min: 0, max: 2 }),
  fraction: fc.oneof(fc.constant(''), fc.stringMatching(/^\d{1,8}$/)),
  unit: fc.constantFrom<Unit>('ms', 's', 'm', 'h', 'd'),
});

describe('integerRange', () => {
  it('matches exactly the integers of its range (exhaustive below 2 000, for many ranges)', () => {
    for (const [low, high] of [
      [0, 0],
      [0, 9],
      [1, 1440],
      [7, 1999],
      [100, 1000],
      [99, 101],
      [1234, 1876],
    ] as const) {
      const regex = new RegExp(`^(?:${integerRange(BigInt(low), BigInt(high))})$`);
      for (let n = 0; n < 2_000; n += 1)
        expect(regex.test(String(n)), `${n} in [${low}, ${high}]`).toBe(n >= low && n <= high);
    }
  });

  it('matches exactly the integers of large ranges', () => {
    fc.assert(
      fc.property(
        fc.bigInt({ min: 0n, max: 10n ** 11n }),
        fc.bigInt({ min: 0n, max: 10n ** 11n }),
        fc.bigInt({ min: 0n, max: 10n ** 12n }),
        (a, b, n) => {
          const [low, high] = a <= b ? [a, b] : [b, a];
          const regex = new RegExp(`^(?:${integerRange(low, high)})$`);
          for (const candidate of [n, low, high, low - 1n, high + 1n].filter((c) => c >= 0n)) {
            expect(regex.test(String(candidate))).toBe(candidate >= low && candidate <= high);
          }
        },
      ),
    );
  });
});

describe('durationPattern', () => {
  it.each(DURATION_BOUNDS)(
    'between %d and %d ms: never refuses a duration hookgate accepts, and is exact for whole amounts and for ms and s',
    (min, max) => {
      const regex = new RegExp(durationPattern(min, max, 'bounds in words'));
      fc.assert(
        fc.property(amount, ({ whole, zeros, fraction, unit }) => {
          const text = `${'0'.repeat(zeros)}${whole}${fraction ? `.${fraction}` : ''}${unit}`;
          const ms = parseDuration(text);
          expect(ms).toBeDefined();
          const accepted = ms !== undefined && ms >= min && ms <= max;
          // Sound: what hookgate accepts, the schema lets through.
          if (accepted) expect(regex.test(text), `${text} in [${min}, ${max}]`).toBe(true);
          // Exact where the bound is a finite decimal in the unit: every whole amount, ms and s.
          if (fraction === '' || unit === 'ms' || unit === 's') {
            expect(regex.test(text), `${text} in [${min}, ${max}]`).toBe(
              within(exactMs(whole, fraction, unit), min, max),
            );
          }
        }),
        { numRuns: 3_000 },
      );
    },
  );

  it('decides the boundaries themselves, in every unit, and refuses what is not a duration', () => {
    const regex = new RegExp(durationPattern(1_000, 86_400_000));
    for (const text of ['1s', '1000ms', '24h', '24.000h', '1d', '86400s', '1440m', ' 5m ', '0024h', '0.5m']) {
      expect(regex.test(text), text).toBe(true);
    }
    for (const text of [
      '48h',
      '999ms',
      '0.9s',
      '24.001h',
      '1.01d',
      '86401s',
      '1441m',
      '0s',
      '5 m',
      '5',
      'h',
      '1.s',
      '.5s',
      '-1s',
      '1e3ms',
    ]) {
      expect(regex.test(text), text).toBe(false);
    }
  });

  it('agrees with the grammar hookgate parses when unbounded', () => {
    const grammar = new RegExp(DURATION_GRAMMAR);
    fc.assert(
      fc.property(fc.string({ maxLength: 8, unit: fc.constantFrom(...'0123456789.mshd x') }), (text) => {
        expect(grammar.test(text)).toBe(parseDuration(text) !== undefined);
      }),
      { numRuns: 5_000 },
    );
  });
});

describe('sizePattern', () => {
  const bounds: readonly [number, number][] = [
    [1024 * 1024, 16 * 1024 ** 3],
    [64 * 1024, 256 * 1024 * 1024],
    [1, 1024],
    [1000, 1_000_000],
  ];

  it.each(bounds)('between %d and %d bytes: exactly the sizes hookgate accepts in that range', (min, max) => {
    const regex = new RegExp(sizePattern(min, max, 'a size'));
    fc.assert(
      fc.property(
        fc.bigInt({ min: 0n, max: 10n ** 11n }).map(String),
        fc.constantFrom('b', 'kb', 'KiB', 'kib', 'mb', 'MiB', 'mib', 'B'),
        fc.constantFrom('', ' ', '  '),
        (count, unit, space) => {
          const text = `${count}${space}${unit}`;
          const parsed = byteSize.safeParse(text);
          expect(parsed.success).toBe(true);
          const bytes = parsed.success ? parsed.data : Number.NaN;
          expect(regex.test(text), text).toBe(bytes >= min && bytes <= max);
        },
      ),
      { numRuns: 3_000 },
    );
  });

  it('agrees with the grammar hookgate parses when unbounded', () => {
    const grammar = new RegExp(SIZE_GRAMMAR);
    fc.assert(
      fc.property(fc.string({ maxLength: 7, unit: fc.constantFrom(...'0129 kKmMiIbB.') }), (text) => {
        expect(grammar.test(text)).toBe(byteSize.safeParse(text).success);
      }),
      { numRuns: 5_000 },
    );
  });
});

describe('sayBounds', () => {
  it('puts words in the pattern that never change what it matches', () => {
    const plain = new RegExp(durationPattern(1_000, 60_000));
    const worded = new RegExp(durationPattern(1_000, 60_000, 'a duration from 1s to 1m'));
    for (const text of [
      '1s',
      '60s',
      '61s',
      '$ a duration from 1s to 1m 5s',
      ' a duration from 1s to 1m 5s',
      '',
    ]) {
      expect(worded.test(text), text).toBe(plain.test(text));
    }
    expect(() => sayBounds('a (bad) word')).toThrow(/not plain words/);
  });
});
