import { describe, expect, it } from 'vitest';
import { Waker } from '../../services/worker/waker.ts';

const settled = async (promise: Promise<void>, withinMs: number): Promise<boolean> =>
  Promise.race([
    promise.then(() => true),
    new Promise<boolean>((resolve) => setTimeout(() => resolve(false), withinMs)),
  ]);

describe('the worker loops’ sleep', () => {
  it('ends when its endpoint is woken, and not when another endpoint is', async () => {
    const waker = new Waker();
    const a = waker.sleep(10_000, 'a');
    waker.wake('b');
    expect(await settled(a, 20)).toBe(false);
    waker.wake('a');
    expect(await settled(a, 20)).toBe(true);
  });

  it('keeps a wake-up that came while no loop of the endpoint slept, for the next sleep', async () => {
    const waker = new Waker();
    // The loops were busy applying when the wake-up came.
    waker.wake('a');
    expect(await settled(waker.sleep(10_000, 'a'), 20)).toBe(true);
    // Kept once: the sleep after it sleeps.
    expect(await settled(waker.sleep(10_000, 'a'), 20)).toBe(false);
    waker.wakeAll();
  });

  it('does not keep a wake-up that woke a sleeping loop', async () => {
    const waker = new Waker();
    const first = waker.sleep(10_000, 'a');
    waker.wake('a');
    expect(await settled(first, 20)).toBe(true);
    expect(await settled(waker.sleep(10_000, 'a'), 20)).toBe(false);
    waker.wakeAll();
  });
});
