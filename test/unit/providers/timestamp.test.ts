import { describe, expect, it } from 'vitest';
import { checkTolerance, parseUnixSeconds } from '../../../services/core/providers/timestamp.ts';
import { NOW_MS, NOW_S } from './fixtures.ts';

describe('parseUnixSeconds', () => {
  it('parses digits', () => {
    expect(parseUnixSeconds(String(NOW_S), 'ts')).toEqual({ ok: true, seconds: NOW_S });
  });
  it('reports a missing timestamp', () => {
    expect(parseUnixSeconds(undefined, 'ts')).toMatchObject({ ok: false, code: 'timestamp_missing' });
  });
  it.each(['1e9', '-1', ' 1700000000', '1700000000.5', '0x10', 'abc', '1234567890123'])(
    'refuses %j',
    (raw) => {
      expect(parseUnixSeconds(raw, 'ts')).toMatchObject({ ok: false, code: 'timestamp_invalid' });
    },
  );
});

describe('checkTolerance', () => {
  it('accepts the edges of the window in both directions', () => {
    expect(checkTolerance(NOW_S - 300, NOW_MS, 300, 'ts')).toBeNull();
    expect(checkTolerance(NOW_S + 300, NOW_MS, 300, 'ts')).toBeNull();
  });
  it('refuses one second past either edge', () => {
    expect(checkTolerance(NOW_S - 301, NOW_MS, 300, 'ts')).toMatchObject({
      code: 'timestamp_out_of_tolerance',
    });
    expect(checkTolerance(NOW_S + 301, NOW_MS, 300, 'ts')).toMatchObject({
      code: 'timestamp_out_of_tolerance',
    });
  });
  it('says which way the clock is off', () => {
    expect(checkTolerance(NOW_S - 1000, NOW_MS, 300, 'ts')?.message).toContain('older');
    expect(checkTolerance(NOW_S + 1000, NOW_MS, 300, 'ts')?.message).toContain('newer');
  });
});
