import { describe, expect, it } from 'vitest';
import { describeVersion, normaliseVersion } from '../../../services/core/providers/version.ts';

function version(value: unknown): string {
  const result = normaliseVersion(value, 'the test field');
  return result.ok ? result.version : result.code;
}

describe('normaliseVersion', () => {
  it('keeps safe integers and digit strings', () => {
    expect(version(42)).toBe('42');
    expect(version(0)).toBe('0');
    expect(version(Number.MAX_SAFE_INTEGER)).toBe('9007199254740991');
    expect(version('9223372036854775807')).toBe('9223372036854775807');
    expect(version('007')).toBe('7');
  });

  it('refuses numbers JSON.parse could not hold exactly, fractions, and bigint overflow', () => {
    expect(version(2 ** 53)).toBe('version_invalid');
    expect(version(1.5)).toBe('version_invalid');
    expect(version('9223372036854775808')).toBe('version_invalid');
  });

  it('turns RFC 3339 into exact microseconds since the epoch', () => {
    // 2024-04-12T10:18:49Z is 1712917129 s; the six fraction digits must survive exactly.
    expect(version('2024-04-12T10:18:49.621022Z')).toBe('1712917129621022');
    expect(version('2024-04-12T10:18:49.621023Z')).toBe('1712917129621023');
    expect(version('2024-04-12T10:18:49Z')).toBe('1712917129000000');
    expect(version('2024-04-12T10:18:49.5Z')).toBe('1712917129500000');
    expect(version('1970-01-01T00:00:00.000001Z')).toBe('1');
  });

  it('applies offsets', () => {
    expect(version('2024-04-12T06:18:49-04:00')).toBe('1712917129000000');
    expect(version('2024-04-12T15:48:49.621022+05:30')).toBe('1712917129621022');
  });

  it('orders timestamps one microsecond apart', () => {
    const a = BigInt(version('2024-04-12T10:18:49.999999Z'));
    const b = BigInt(version('2024-04-12T10:18:50Z'));
    expect(b - a).toBe(1n);
  });

  it('truncates nanosecond digits to microseconds rather than refusing them', () => {
    expect(version('2024-04-12T10:18:49.123456789Z')).toBe(version('2024-04-12T10:18:49.123456Z'));
  });

  it('handles years below 100 without the 1900 mapping of Date.UTC', () => {
    expect(version('0050-01-01T00:00:00Z')).toBe(String(BigInt(Date.parse('0050-01-01T00:00:00Z')) * 1000n));
  });

  it.each([
    '2024-04-12',
    '2024-04-12T10:18:49',
    '2024-04-12T10:18:49.1234567890Z',
    '2024-02-30T00:00:00Z',
    '2024-13-01T00:00:00Z',
    '2024-04-12T24:00:00Z',
    '2024-04-12T10:18:60Z',
    '2024-04-12T10:18:49+25:00',
    'yesterday',
    '-5',
    '',
    '12.5',
  ])('refuses %j', (text) => {
    expect(version(text)).toBe('version_invalid');
  });

  it('refuses non-scalar values', () => {
    expect(version(true)).toBe('version_invalid');
    expect(version({})).toBe('version_invalid');
  });

  it('names the source in its message', () => {
    const result = normaliseVersion('nope', 'the body field /updated_at');
    expect(result.ok).toBe(false);
    if (!result.ok) expect(result.message).toContain('/updated_at');
  });
});

describe('describeVersion', () => {
  it('shows a version read from a timestamp as the time it encodes, and an integer as itself', () => {
    expect(describeVersion('42')).toBe('v42');
    expect(describeVersion('1796414700000000')).toBe('v1796414700000000 (2026-12-04T20:05:00Z)');
    expect(describeVersion('1796414700123456')).toBe('v1796414700123456 (2026-12-04T20:05:00.123456Z)');
    // Outside this century's microseconds: an integer, shown as it is.
    expect(describeVersion('99999999999999999')).toBe('v99999999999999999');
  });
});
