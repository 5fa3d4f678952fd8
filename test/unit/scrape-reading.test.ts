import { describe, expect, it } from 'vitest';
import { scrapeReading } from '../../services/core/scrape-reading.ts';

describe('scrapeReading', () => {
  it('queries once per cache window, shares a query in flight, and serves the last reading when one fails', async () => {
    let clock = 0;
    let calls = 0;
    let fail = false;
    const errors: string[] = [];
    const read = scrapeReading(
      async () => {
        calls += 1;
        await new Promise((resolve) => setTimeout(resolve, 5));
        if (fail) throw new Error('down');
        return calls;
      },
      { cacheMs: 1_000, empty: -1, now: () => clock, onError: (error) => errors.push(error.message) },
    );
    expect(await Promise.all([read(), read(), read()])).toEqual([1, 1, 1]);
    clock = 999;
    expect(await read()).toBe(1);
    expect(calls).toBe(1);
    clock = 1_000;
    fail = true;
    expect(await read()).toBe(1);
    expect(errors).toEqual(['down']);
    fail = false;
    expect(await read()).toBe(3);
  });

  it('serves its empty value when no reading ever succeeded', async () => {
    const read = scrapeReading(async () => Promise.reject(new Error('down')), { cacheMs: 1_000, empty: [] });
    expect(await read()).toEqual([]);
  });
});
