import { describe, expect, it } from 'vitest';
import { evaluatePointer, isJsonPointer } from '../../../services/core/providers/json-pointer.ts';

// The example document of RFC 6901 section 5.
const doc = {
  foo: ['bar', 'baz'],
  '': 0,
  'a/b': 1,
  'c%d': 2,
  'e^f': 3,
  'g|h': 4,
  'i\\j': 5,
  'k"l': 6,
  ' ': 7,
  'm~n': 8,
};

describe('evaluatePointer', () => {
  it.each([
    ['', doc],
    ['/foo', ['bar', 'baz']],
    ['/foo/0', 'bar'],
    ['/', 0],
    ['/a~1b', 1],
    ['/c%d', 2],
    ['/e^f', 3],
    ['/g|h', 4],
    ['/i\\j', 5],
    ['/k"l', 6],
    ['/ ', 7],
    ['/m~0n', 8],
  ])('evaluates the RFC 6901 example %j', (pointer, expected) => {
    expect(evaluatePointer(doc, pointer)).toEqual(expected);
  });

  it('unescapes ~01 to ~1, not to /', () => {
    expect(evaluatePointer({ '~1': 'tilde-one', '/': 'slash' }, '/~01')).toBe('tilde-one');
  });

  it.each(['/foo/2', '/foo/-', '/foo/01', '/foo/x', '/missing', '/foo/0/deeper', 'foo', '/m~2n'])(
    'returns undefined for %j',
    (pointer) => {
      expect(evaluatePointer(doc, pointer)).toBeUndefined();
    },
  );

  it('does not reach inherited properties', () => {
    expect(evaluatePointer({}, '/constructor')).toBeUndefined();
    expect(evaluatePointer({ a: 'x' }, '/a/length')).toBeUndefined();
  });

  it('returns null values as null, distinct from absent', () => {
    expect(evaluatePointer({ a: null }, '/a')).toBeNull();
  });
});

describe('isJsonPointer', () => {
  it('accepts valid pointers and refuses the rest', () => {
    expect(isJsonPointer('')).toBe(true);
    expect(isJsonPointer('/a/~0/~1')).toBe(true);
    expect(isJsonPointer('a')).toBe(false);
    expect(isJsonPointer('/a~')).toBe(false);
    expect(isJsonPointer('/a~2')).toBe(false);
  });
});
