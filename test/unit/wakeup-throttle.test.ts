import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { WakeupThrottle } from '../../services/core/queue/wakeup-throttle.ts';

let clock = 0;
let sent: string[][] = [];
const throttle = (intervalMs: number, send?: (endpoints: readonly string[]) => Promise<void>) =>
  new WakeupThrottle({
    intervalMs,
    now: () => clock,
    send:
      send ??
      (async (endpoints) => {
        sent.push([...endpoints]);
      }),
  });

/** Moves the clock and the timers together. */
async function advance(ms: number): Promise<void> {
  clock += ms;
  await vi.advanceTimersByTimeAsync(ms);
}

beforeEach(() => {
  vi.useFakeTimers();
  clock = 1_000;
  sent = [];
});
afterEach(() => {
  vi.useRealTimers();
});

describe('the gateway’s wake-ups', () => {
  it('with interval 0, every claim carries its wake-up', () => {
    const wakeups = throttle(0);
    expect([wakeups.take(['a']), wakeups.take(['a']), wakeups.take(['a'])]).toEqual([true, true, true]);
  });

  it('a claim carries the wake-up when its endpoint’s last one is older than the interval', async () => {
    const wakeups = throttle(20);
    expect(wakeups.take(['a'])).toBe(true);
    await advance(5);
    expect(wakeups.take(['a'])).toBe(false);
    // Another endpoint has its own window.
    expect(wakeups.take(['b'])).toBe(true);
    await advance(15);
    expect(wakeups.take(['a'])).toBe(true);
  });

  it('a claim committed without a wake-up is announced once the interval since the last one has passed', async () => {
    const wakeups = throttle(20);
    expect(wakeups.take(['a'])).toBe(true);
    await advance(5);
    expect(wakeups.take(['a'])).toBe(false);
    wakeups.owe(['a']);
    await advance(5);
    expect(wakeups.take(['a'])).toBe(false);
    wakeups.owe(['a']);
    await advance(9);
    expect(sent).toEqual([]);
    await advance(1);
    // One wake-up for both claims, 20 ms after the last one.
    expect(sent).toEqual([['a']]);
    await advance(100);
    expect(sent).toEqual([['a']]);
    // It counts as the endpoint's last wake-up.
    expect(wakeups.take(['a'])).toBe(true);
  });

  it('keeps what is owed when a claim that carried a wake-up came after it (that claim may fail)', async () => {
    const wakeups = throttle(20);
    wakeups.take(['a']);
    wakeups.owe(['a']);
    await advance(20);
    expect(sent).toEqual([['a']]);
  });

  it('sends what is owed at once on flush, and reports a failed send instead of throwing', async () => {
    const errors: unknown[] = [];
    const wakeups = new WakeupThrottle({
      intervalMs: 1_000,
      now: () => clock,
      send: async () => {
        throw new Error('database gone');
      },
      onError: (error) => errors.push(error),
    });
    wakeups.take(['a', 'b']);
    wakeups.owe(['b', 'a']);
    await wakeups.flush();
    expect(errors).toHaveLength(1);
    await advance(2_000);
    expect(errors).toHaveLength(1);
  });

  it('sends owed endpoints together, sorted', async () => {
    const wakeups = throttle(10);
    wakeups.take(['b']);
    wakeups.take(['a']);
    wakeups.owe(['b']);
    wakeups.owe(['a']);
    await advance(10);
    expect(sent).toEqual([['a', 'b']]);
  });
});
