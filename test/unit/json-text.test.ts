import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { INDENTED_DEPTH, jsonDepth, jsonText } from '../../services/core/json-text.ts';

/** `[[[…]]]` `depth` levels deep, `{"a":` objects every other level, with a value at the bottom. */
function nested(depth: number): unknown {
  let value: unknown = 'bottom';
  for (let level = depth; level > 0; level -= 1) value = level % 2 === 0 ? { a: value } : [value];
  return value;
}

describe('jsonText', () => {
  it('is JSON.stringify(value, null, 2) for every JSON value within the indented depth', () => {
    fc.assert(
      fc.property(fc.jsonValue({ maxDepth: 8 }), (value) => {
        expect(jsonText(value)).toBe(JSON.stringify(value, null, 2));
      }),
      { numRuns: 2_000 },
    );
  });

  it('is JSON.stringify(value, null, 2) for what the CLI prints: dates, buffers, undefined, odd numbers', () => {
    const value = {
      at: new Date(Date.UTC(2026, 11, 1)),
      bytes: Buffer.from('hi'),
      gone: undefined,
      fn: () => 1,
      list: [
        undefined,
        () => 1,
        Number.NaN,
        Number.POSITIVE_INFINITY,
        -0,
        1e21,
        new Number(3),
        new String('s'),
      ],
      empty: {},
      emptyList: [],
      onlyUndefined: { a: undefined },
      unicode: 'é\u2028\u0000"\\',
      [Symbol('s')]: 1,
    };
    expect(jsonText(value)).toBe(JSON.stringify(value, null, 2));
    expect(jsonText(undefined)).toBe('null');
    expect(() => jsonText({ n: 1n })).toThrow(TypeError);
    const cycle: Record<string, unknown> = { a: [1] };
    cycle.self = { back: cycle };
    expect(() => jsonText(cycle)).toThrow(/circular/);
    // The same object twice, not a cycle.
    const shared = { x: 1 };
    expect(jsonText([shared, shared])).toBe(JSON.stringify([shared, shared], null, 2));
  });

  it('writes containers deeper than the indented depth on one line, as the same JSON value', () => {
    const value = nested(INDENTED_DEPTH + 10);
    const text = jsonText(value);
    expect(JSON.stringify(JSON.parse(text))).toBe(JSON.stringify(value));
    // Lines only for the indented levels (each opens one line, each closes one), plus the deep rest.
    expect(text.split('\n').length).toBe(2 * INDENTED_DEPTH + 1);
    expect(text).toContain(JSON.stringify(nested(10)).slice(0, 20));
  });

  it('writes a value nested 6 000 and 100 000 levels deep, which JSON.stringify cannot, in text of its size', () => {
    for (const depth of [6_000, 100_000]) {
      const value = JSON.parse(`${'['.repeat(depth)}1${']'.repeat(depth)}`) as unknown;
      expect(() => JSON.stringify(value, null, 2)).toThrow(RangeError);
      const text = jsonText(value);
      expect(text.replace(/\s/g, '')).toBe(`${'['.repeat(depth)}1${']'.repeat(depth)}`);
      expect(text.length).toBeLessThan(2 * depth + 10 * INDENTED_DEPTH ** 2);
      expect(jsonDepth(value)).toBe(depth);
    }
  });

  it('measures depth without recursing', () => {
    expect(jsonDepth(1)).toBe(0);
    expect(jsonDepth([])).toBe(1);
    expect(jsonDepth({ a: [1, { b: null }] })).toBe(3);
    expect(jsonDepth(nested(250_000))).toBe(250_000);
  });
});
