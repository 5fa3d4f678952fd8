import { describe, expect, it } from 'vitest';
import { sourceOf } from '../../services/core/client-source.ts';
import { ReplayTokenLimiter } from '../../services/gateway/replay-limit.ts';

describe('ReplayTokenLimiter', () => {
  it('limits after maxFailures within the window and forgets after it', () => {
    const limiter = new ReplayTokenLimiter({ maxFailures: 2, windowMs: 60_000, maxSources: 100 });
    limiter.recordFailure('10.0.0.1', 'stripe', 0);
    expect(limiter.retryAfter('10.0.0.1', 'stripe', 1_000)).toBe(0);
    limiter.recordFailure('10.0.0.1', 'stripe', 1_000);
    expect(limiter.retryAfter('10.0.0.1', 'stripe', 1_500)).toBe(59);
    expect(limiter.retryAfter('10.0.0.2', 'stripe', 1_500)).toBe(0);
    expect(limiter.retryAfter('10.0.0.1', 'github', 1_500)).toBe(0);
    expect(limiter.retryAfter('10.0.0.1', 'stripe', 60_000)).toBe(0);
    expect(limiter.size).toBe(0);
  });

  it('stays within maxSources however many sources fail, keeping the most recent', () => {
    const limiter = new ReplayTokenLimiter({ maxFailures: 1, windowMs: 60_000, maxSources: 1_000 });
    let largest = 0;
    for (let i = 0; i < 100_000; i += 1) {
      limiter.recordFailure(`10.${(i >> 16) & 255}.${(i >> 8) & 255}.${i & 255}`, 'stripe', 0);
      largest = Math.max(largest, limiter.size);
    }
    expect(largest).toBe(1_000);
    expect(limiter.size).toBe(1_000);
    // The last source to fail is still limited; the first one was forgotten.
    expect(limiter.retryAfter('10.1.134.159', 'stripe', 1)).toBeGreaterThan(0);
    expect(limiter.retryAfter('10.0.0.0', 'stripe', 1)).toBe(0);
  });
});

describe('sourceOf', () => {
  it('is the socket peer unless proxies are trusted', () => {
    expect(sourceOf('127.0.0.1', '203.0.113.9', 0)).toBe('127.0.0.1');
    expect(sourceOf('::ffff:127.0.0.1', undefined, 0)).toBe('127.0.0.1');
  });

  it('takes the n-th X-Forwarded-For entry from the right, ignoring what the client wrote further left', () => {
    // The client wrote 1.1.1.1; the ingress appended what it saw (198.51.100.7).
    expect(sourceOf('10.0.0.5', '1.1.1.1, 198.51.100.7', 1)).toBe('198.51.100.7');
    expect(sourceOf('10.0.0.5', '1.1.1.1, 198.51.100.7, 10.0.0.4', 2)).toBe('198.51.100.7');
    expect(sourceOf('10.0.0.5', '198.51.100.7', 3)).toBe('198.51.100.7');
    expect(sourceOf('10.0.0.5', 'not-an-address', 1)).toBe('10.0.0.5');
    expect(sourceOf('10.0.0.5', undefined, 1)).toBe('10.0.0.5');
  });

  it('counts IPv6 per /64', () => {
    expect(sourceOf('2001:db8:1:2:aaaa::1', undefined, 0)).toBe('2001:db8:1:2::/64');
    expect(sourceOf('2001:db8:1:2:bbbb:cccc:dddd:eeee', undefined, 0)).toBe('2001:db8:1:2::/64');
    expect(sourceOf('2001:db8::1', undefined, 0)).toBe('2001:db8:0:0::/64');
    expect(sourceOf('::1', undefined, 0)).toBe('0:0:0:0::/64');
  });
});
