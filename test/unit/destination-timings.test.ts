import { describe, expect, it } from 'vitest';
import { parseConfig } from '../../services/core/config/load.ts';
import { retryDelayMs } from '../../services/worker/destination-request.ts';
import { leaseSecondsFor, tokenWaitMs } from '../../services/worker/destinations.ts';

// The destinations' shipped timings, proved by their arithmetic rather than waited out: the
// default retry schedule, the lease against the request's timeout, the token bucket's waits, and
// the breaker's defaults.

const defaults = parseConfig(
  {
    endpoints: {
      pay: {
        provider: 'standard-webhooks',
        secrets: ['whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw'],
        destinations: {
          ledger: { url: 'https://ledger.example/hooks', breaker: { failures: 5, rate: { ratio: 0.5 } } },
        },
      },
    },
  },
  {},
).endpoints.pay!.destinations!.ledger!;

describe('the default retry schedule', () => {
  it('is 10 retries, 5 s doubling to the 15 min cap, jitter taking at most a fifth off each', () => {
    expect(defaults.retry).toEqual({ limit: 10, backoff: 5_000, max: 900_000, jitter: 0.2 });
    const longest = Array.from({ length: defaults.retry.limit }, (_, i) =>
      retryDelayMs(defaults.retry, i + 1, undefined, () => 0),
    );
    expect(longest.map((ms) => ms / 1000)).toEqual([5, 10, 20, 40, 80, 160, 320, 640, 900, 900]);
    const shortest = Array.from({ length: defaults.retry.limit }, (_, i) =>
      retryDelayMs(defaults.retry, i + 1, undefined, () => 1),
    );
    expect(shortest.map((ms) => ms / 1000)).toEqual([4, 8, 16, 32, 64, 128, 256, 512, 720, 720]);
    // A delivery that keeps failing is dead 41 to 51¼ minutes after its first attempt (plus its requests).
    expect(shortest.reduce((a, b) => a + b, 0) / 60_000).toBeCloseTo(41.0, 1);
    expect(longest.reduce((a, b) => a + b, 0) / 60_000).toBeCloseTo(51.25, 2);
  });

  it('honours a Retry-After within the cap, and never waits past it', () => {
    expect(retryDelayMs(defaults.retry, 1, 120, () => 0)).toBe(120_000);
    expect(retryDelayMs(defaults.retry, 1, 86_400, () => 0)).toBe(900_000);
    expect(retryDelayMs(defaults.retry, 40, undefined, () => 0)).toBe(900_000);
  });
});

describe("an attempt's lease", () => {
  it('outlasts every request it covers by the 5 s kept for recording its result; it is never renewed', () => {
    expect(defaults.timeout).toBe(10_000);
    expect(leaseSecondsFor(defaults.timeout)).toBe(15);
    for (const timeoutMs of [100, 1_000, 10_000, 120_000]) {
      expect(leaseSecondsFor(timeoutMs) * 1000 - timeoutMs).toBe(5_000);
    }
  });
});

describe("a rate limit's token wait", () => {
  it('is the time to the next whole token when the bucket stopped the claim, none when the backlog did', () => {
    // 10/s, the bucket emptied: a tenth of a second.
    expect(tokenWaitMs({ tokens: 8, allowed: 8, rows: 8, taken: 8, perSecond: 10 })).toBe(100);
    // Half a token left: half of that.
    expect(tokenWaitMs({ tokens: 2.5, allowed: 2, rows: 2, taken: 2, perSecond: 10 })).toBe(50);
    // Tokens left, slots full: at once.
    expect(tokenWaitMs({ tokens: 10, allowed: 4, rows: 4, taken: 4, perSecond: 10 })).toBe(0);
    // Fewer due than allowed: the backlog, not the bucket, ended it.
    expect(tokenWaitMs({ tokens: 10, allowed: 8, rows: 3, taken: 3, perSecond: 10 })).toBeNull();
    // A delivery ended dead at the claim took no token.
    expect(tokenWaitMs({ tokens: 1, allowed: 1, rows: 1, taken: 0, perSecond: 0.5 })).toBe(0);
  });
});

describe("a breaker's defaults", () => {
  it('cool down for 30 s and count the rate over a 1 min window of at least 10 attempts', () => {
    expect(defaults.breaker).toEqual({
      failures: 5,
      cooldown: 30_000,
      rate: { ratio: 0.5, window: 60_000, minimum: 10 },
    });
  });
});
