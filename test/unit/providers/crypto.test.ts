import { describe, expect, it } from 'vitest';
import {
  anyMatch,
  bytesEqual,
  decodeBase64,
  decodeBase64Key,
  decodeHex,
  hmac,
} from '../../../services/core/providers/crypto.ts';

describe('decodeHex', () => {
  it('decodes lower-case hex', () => {
    expect(decodeHex('00ffab')).toEqual(Buffer.from([0, 255, 171]));
  });
  // Providers send lower case and their libraries compare the text they computed, so an
  // upper-case spelling is refused as they refuse it (docs/providers.md, "Strict parsing").
  it.each(['00ffAB', 'FF'])('refuses upper-case %j as the official libraries do', (text) => {
    expect(decodeHex(text)).toBeNull();
  });
  it.each(['', 'abc', 'zz', '00 ff', 'ff\n', '0x00'])('refuses %j instead of decoding a prefix', (text) => {
    expect(decodeHex(text)).toBeNull();
  });
});

describe('decodeBase64', () => {
  it('decodes canonical padded base64', () => {
    expect(decodeBase64('aGk=')).toEqual(Buffer.from('hi'));
  });
  it.each(['', 'aGk', 'aGl=', 'a*k=', 'aGk=\n', 'aG-_', '===='])('refuses %j', (text) => {
    expect(decodeBase64(text)).toBeNull();
  });
});

describe('decodeBase64Key', () => {
  it('accepts unpadded and url-safe spellings of a configured key', () => {
    expect(decodeBase64Key('aGk')).toEqual(Buffer.from('hi'));
    expect(decodeBase64Key('-_8=')).toEqual(Buffer.from([0xfb, 0xff]));
  });
  it('refuses text that is not base64', () => {
    expect(decodeBase64Key('not base64!')).toBeNull();
    expect(decodeBase64Key('')).toBeNull();
  });
});

describe('bytesEqual and anyMatch', () => {
  it('compares bytes, with unequal lengths a plain mismatch', () => {
    expect(bytesEqual(Buffer.from('abc'), Buffer.from('abc'))).toBe(true);
    expect(bytesEqual(Buffer.from('abc'), Buffer.from('abd'))).toBe(false);
    expect(bytesEqual(Buffer.from('abc'), Buffer.from('abcd'))).toBe(false);
  });
  it('finds a match among several candidates and digests', () => {
    const a = Buffer.from('a');
    const b = Buffer.from('b');
    expect(anyMatch([a, b], [Buffer.from('c'), b])).toBe(true);
    expect(anyMatch([a], [b])).toBe(false);
    expect(anyMatch([], [a])).toBe(false);
  });
});

describe('hmac', () => {
  it('signs the concatenation of its parts (RFC 4231 test case 2)', () => {
    const digest = hmac('sha256', 'Jefe', ['what do ya want ', Buffer.from('for nothing?')]);
    expect(digest.toString('hex')).toBe('5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843');
  });
});
