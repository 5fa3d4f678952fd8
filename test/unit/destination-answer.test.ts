import { describe, expect, it } from 'vitest';
import { hexDump } from '../../services/cli/support/hex-dump.ts';
import {
  ANSWER_CHARS,
  answerText,
  headersText,
  storableError,
  storableText,
  utf8OrEscaped,
} from '../../services/core/destinations/answer.ts';

// What a receiver answers, as stored: text PostgreSQL can always hold (no NUL, no lone
// surrogate), bounded, and readable where the bytes allow it.

describe('storable text', () => {
  it('escapes NUL and the other C0 controls but tab, newline and carriage return, and lone surrogates', () => {
    expect(storableText('a\u0000b\u0001c\u001bd\te\nf\rg', 100)).toBe('a\\x00b\\x01c\\x1bd\te\nf\rg');
    expect(storableText('x\ud800y\udc00z', 100)).toBe('x\\ud800y\\udc00z');
    expect(storableText('pair 😀 kept', 100)).toBe('pair 😀 kept');
  });

  it('is bounded once escaped, cut at a whole escape or character, the cut marked', () => {
    expect(storableText('abcdef', 4)).toBe('abcd…');
    expect(storableText('ab\u0000cd', 4)).toBe('ab…');
    expect(storableText('a😀b', 2)).toBe('a…');
    expect(storableText('\u0000'.repeat(5000), 1000)).toHaveLength(1001);
    expect(storableError('x'.repeat(5000))).toHaveLength(1001);
  });
});

describe('bytes as UTF-8', () => {
  it('decodes valid sequences and escapes each byte of an invalid one', () => {
    expect(utf8OrEscaped(Buffer.from('café ✓ 😀', 'utf8'))).toBe('café ✓ 😀');
    const cases: [number[], string][] = [
      [[0xc3, 0x28], '\\xc3('],
      [[0xff, 0xfe], '\\xff\\xfe'],
      [[0xc0, 0x80], '\\xc0\\x80'], // overlong NUL
      [[0xe0, 0x80, 0x80], '\\xe0\\x80\\x80'], // overlong
      [[0xed, 0xa0, 0x80], '\\xed\\xa0\\x80'], // an encoded surrogate
      [[0xf4, 0x90, 0x80, 0x80], '\\xf4\\x90\\x80\\x80'], // past U+10FFFF
      [[0x61, 0xf0, 0x9f, 0x98], 'a\\xf0\\x9f\\x98'], // cut short
    ];
    for (const [bytes, text] of cases) expect(utf8OrEscaped(Buffer.from(bytes)), text).toBe(text);
  });
});

describe("an answer's rendering", () => {
  const iis = 'Service Unavailable';
  it('decodes UTF-16 by its byte-order mark, its charset, or its zero bytes', () => {
    expect(answerText(Buffer.from(`\ufeff${iis}`, 'utf16le'), 'text/html')).toBe(iis);
    expect(answerText(Buffer.from(`\ufeff${iis}`, 'utf16le').swap16(), null)).toBe(iis);
    expect(answerText(Buffer.from(iis, 'utf16le'), 'text/html; charset="UTF-16"')).toBe(iis);
    expect(answerText(Buffer.from(iis, 'utf16le'), null)).toBe(iis);
    expect(answerText(Buffer.from(iis, 'utf16le').swap16(), 'text/plain')).toBe(iis);
    // A cut in the middle of a character: its byte, escaped.
    expect(answerText(Buffer.from('ab', 'utf16le').subarray(0, 3), 'text/plain; charset=utf-16le')).toBe(
      'a\\x62',
    );
  });

  it('decodes the charset a content-type names, and UTF-8 otherwise, escaping what is not text', () => {
    expect(answerText(Buffer.from([0x63, 0x61, 0x66, 0xe9]), 'text/plain; charset=ISO-8859-1')).toBe('café');
    expect(answerText(Buffer.from([0xef, 0xbb, 0xbf, 0x6f, 0x6b]), null)).toBe('ok');
    expect(answerText(Buffer.from('upstream\u0000failed'), 'text/plain')).toBe('upstream\\x00failed');
    expect(answerText(Buffer.from([0x62, 0xff, 0x00, 0x1b, 0x5b, 0x33, 0x31, 0x6d]), null)).toBe(
      'b\\xff\\x00\\x1b[31m',
    );
    // A charset this Node does not know falls back to UTF-8, escaped.
    expect(answerText(Buffer.from([0x61, 0xff]), 'text/plain; charset=x-no-such')).toBe('a\\xff');
  });

  it('is bounded', () => {
    const text = answerText(Buffer.alloc(1200, 'abc\u0000'), null);
    expect(text.length).toBeLessThanOrEqual(ANSWER_CHARS + 1);
    expect(text.endsWith('…')).toBe(true);
  });
});

describe("an answer's headers", () => {
  it('shows a value sent as UTF-8 bytes as its characters, and other bytes escaped', () => {
    // fetch hands a header value over one byte a character.
    const utf8 = Buffer.from('café ✓ 日本', 'utf8').toString('latin1');
    const invalid = Buffer.from([0x61, 0xff, 0x62]).toString('latin1');
    expect(
      headersText([
        ['content-type', 'text/plain'],
        ['x-reason', utf8],
        ['x-raw', invalid],
      ]),
    ).toBe('content-type: text/plain\nx-reason: café ✓ 日本\nx-raw: a\\xffb');
  });

  it('is bounded in count, per value and in all', () => {
    const many = Array.from({ length: 50 }, (_, n) => [`x-h${n}`, 'v'] as const);
    const text = headersText(many);
    expect(text.split('\n')).toHaveLength(41);
    expect(text.endsWith('… 10 more header(s)')).toBe(true);
    expect(headersText([['x-long', 'v'.repeat(10_000)]])).toHaveLength('x-long: '.length + 201);
    const wide = Array.from({ length: 40 }, (_, n) => [`x-h${n}`, 'v'.repeat(150)] as const);
    expect(headersText(wide).length).toBeLessThanOrEqual(2001);
  });
});

describe('the CLI hex dump', () => {
  it('prints offsets, bytes and their printable ASCII, aligned, for any bytes', () => {
    expect(hexDump(Buffer.from('upstream\u0000failed\u0000\u001b[2J'))).toEqual([
      '00000000  75 70 73 74 72 65 61 6d 00 66 61 69 6c 65 64 00  upstream.failed.',
      '00000010  1b 5b 32 4a                                      .[2J',
    ]);
    expect(hexDump(Buffer.alloc(0))).toEqual([]);
  });
});
