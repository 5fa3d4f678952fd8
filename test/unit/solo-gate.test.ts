import { setTimeout as sleep } from 'node:timers/promises';
import { describe, expect, it } from 'vitest';
import { SoloGate } from '../../services/worker/solo-gate.ts';

/** A promise and the function that settles it, to hold a step at a chosen point. */
function latch(): { promise: Promise<void>; open: () => void } {
  let open: () => void = () => {};
  const promise = new Promise<void>((resolve) => {
    open = resolve;
  });
  return { promise, open };
}

describe('SoloGate', () => {
  it('lets steps run side by side while no suspect is waiting', async () => {
    const gate = new SoloGate();
    let inside = 0;
    let most = 0;
    const step = () =>
      gate.step(async () => {
        inside += 1;
        most = Math.max(most, inside);
        await sleep(20);
        inside -= 1;
      });
    await Promise.all([step(), step(), step()]);
    expect(most).toBe(3);
  });

  it('runs a suspect only once every other step has finished, and starts no step meanwhile', async () => {
    const gate = new SoloGate();
    const log: string[] = [];
    const other = latch();
    const suspectDone = latch();
    const busy = gate.step(async () => {
      log.push('other starts');
      await other.promise;
      log.push('other ends');
    });
    const suspect = gate.step(async (solo) => {
      await solo(async () => {
        log.push('suspect runs');
        await sleep(20);
        log.push('suspect ends');
      });
      suspectDone.open();
    });
    await sleep(10);
    // A step arriving while the suspect waits does not start (it would fetch jobs a crash takes).
    const late = gate.step(async () => {
      log.push('late starts');
    });
    await sleep(10);
    expect(log).toEqual(['other starts']);
    other.open();
    await Promise.all([busy, suspect, late, suspectDone.promise]);
    expect(log).toEqual(['other starts', 'other ends', 'suspect runs', 'suspect ends', 'late starts']);
  });

  it('runs two suspects of two steps one after the other, never together', async () => {
    const gate = new SoloGate();
    let inside = 0;
    let most = 0;
    const suspectStep = () =>
      gate.step((solo) =>
        solo(async () => {
          inside += 1;
          most = Math.max(most, inside);
          await sleep(20);
          inside -= 1;
        }),
      );
    await Promise.all([suspectStep(), suspectStep(), suspectStep()]);
    expect(most).toBe(1);
  });

  it('goes on after a suspect throws', async () => {
    const gate = new SoloGate();
    await expect(
      gate.step((solo) =>
        solo(async () => {
          throw new Error('boom');
        }),
      ),
    ).rejects.toThrow('boom');
    await expect(gate.step(async () => 'next')).resolves.toBe('next');
  });
});
