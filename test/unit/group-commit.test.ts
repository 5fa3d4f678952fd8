import { describe, expect, it } from 'vitest';
import { GroupCommitOverloaded, GroupCommitter } from '../../services/core/inbox/group-commit.ts';

function recorder(options: {
  maxBatch: number;
  maxWaitMs: number;
  concurrency: number;
  fail?: (n: number[]) => boolean;
}) {
  const batches: number[][] = [];
  let running = 0;
  let peak = 0;
  const committer = new GroupCommitter<number, string>({
    ...options,
    commit: async (items) => {
      running += 1;
      peak = Math.max(peak, running);
      batches.push([...items]);
      await new Promise((resolve) => setTimeout(resolve, 5));
      running -= 1;
      if (options.fail?.([...items])) throw new Error('commit failed');
      return items.map((item) => `done ${item}`);
    },
  });
  return { committer, batches, peak: () => peak };
}

describe('group commit', () => {
  it('gives every caller its own result', async () => {
    const { committer } = recorder({ maxBatch: 10, maxWaitMs: 1, concurrency: 2 });
    const results = await Promise.all([1, 2, 3].map((n) => committer.submit(n)));
    expect(results).toEqual(['done 1', 'done 2', 'done 3']);
  });

  it('shares one commit among items submitted together, up to maxBatch', async () => {
    const { committer, batches } = recorder({ maxBatch: 4, maxWaitMs: 50, concurrency: 1 });
    await Promise.all(Array.from({ length: 10 }, (_, i) => committer.submit(i)));
    expect(batches.map((b) => b.length)).toEqual([4, 4, 2]);
    expect(batches.flat()).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
  });

  it('never runs more commits at once than its concurrency', async () => {
    const { committer, peak } = recorder({ maxBatch: 1, maxWaitMs: 1, concurrency: 3 });
    await Promise.all(Array.from({ length: 20 }, (_, i) => committer.submit(i)));
    expect(peak()).toBe(3);
  });

  it('sends a lone item once its wait is over', async () => {
    const { committer, batches } = recorder({ maxBatch: 100, maxWaitMs: 5, concurrency: 1 });
    expect(await committer.submit(7)).toBe('done 7');
    expect(batches).toEqual([[7]]);
  });

  it('fails only the callers of a failed commit', async () => {
    const { committer } = recorder({
      maxBatch: 2,
      maxWaitMs: 50,
      concurrency: 1,
      fail: (items) => items.includes(1),
    });
    const settled = await Promise.allSettled([0, 1, 2, 3].map((n) => committer.submit(n)));
    expect(settled.map((s) => s.status)).toEqual(['rejected', 'rejected', 'fulfilled', 'fulfilled']);
  });

  it('refuses at once when maxQueued items are already waiting', async () => {
    const committer = new GroupCommitter<number, string>({
      maxBatch: 100,
      maxWaitMs: 10_000,
      concurrency: 1,
      maxQueued: 2,
      commit: async (items) => items.map((item) => `done ${item}`),
    });
    const waiting = [committer.submit(1), committer.submit(2)];
    await expect(committer.submit(3)).rejects.toBeInstanceOf(GroupCommitOverloaded);
    await committer.drain();
    expect(await Promise.all(waiting)).toEqual(['done 1', 'done 2']);
  });

  it('refuses items that waited longer than maxQueueAgeMs instead of committing them late', async () => {
    const committed: number[] = [];
    let release: () => void = () => {};
    const blocked = new Promise<void>((resolve) => {
      release = resolve;
    });
    const committer = new GroupCommitter<number, string>({
      maxBatch: 1,
      maxWaitMs: 0,
      concurrency: 1,
      maxQueueAgeMs: 20,
      commit: async (items) => {
        if (items[0] === 1) await blocked;
        committed.push(...items);
        return items.map((item) => `done ${item}`);
      },
    });
    const first = committer.submit(1);
    const stale = committer.submit(2);
    await new Promise((resolve) => setTimeout(resolve, 60));
    release();
    expect(await first).toBe('done 1');
    await expect(stale).rejects.toBeInstanceOf(GroupCommitOverloaded);
    expect(committed).toEqual([1]);
  });

  it('commits lone items by themselves, at once, under the same bounds and slots', async () => {
    const batches: number[][] = [];
    let running = 0;
    let peak = 0;
    let release: () => void = () => {};
    const blocked = new Promise<void>((resolve) => {
      release = resolve;
    });
    const committer = new GroupCommitter<number, string>({
      maxBatch: 10,
      maxWaitMs: 10_000,
      concurrency: 1,
      maxQueued: 4,
      // Negative numbers stand for sync-mode claims.
      alone: (n) => n < 0,
      commit: async (items) => {
        running += 1;
        peak = Math.max(peak, running);
        batches.push([...items]);
        if (items[0] === -1) await blocked;
        running -= 1;
        return items.map((item) => `done ${item}`);
      },
    });
    // A lone item does not wait maxWaitMs for company: it takes the slot at once.
    const first = committer.submit(-1);
    await new Promise((resolve) => setTimeout(resolve, 10));
    expect(batches).toEqual([[-1]]);
    const queued = [committer.submit(1), committer.submit(-2), committer.submit(2), committer.submit(-3)];
    // The queue bound holds for lone items too.
    await expect(committer.submit(-4)).rejects.toBeInstanceOf(GroupCommitOverloaded);
    release();
    expect(await first).toBe('done -1');
    expect(await Promise.all(queued)).toEqual(['done 1', 'done -2', 'done 2', 'done -3']);
    expect(batches).toEqual([[-1], [1, 2], [-2], [-3]]);
    expect(peak).toBe(1);
  });

  it('drains waiting and in-flight items', async () => {
    const { committer, batches } = recorder({ maxBatch: 100, maxWaitMs: 10_000, concurrency: 1 });
    const pending = [committer.submit(1), committer.submit(2)];
    await committer.drain();
    expect(batches).toEqual([[1, 2]]);
    expect(await Promise.all(pending)).toEqual(['done 1', 'done 2']);
  });

  describe('bounded by size as well as by count (each item below weighs its own value)', () => {
    /** Items are their own size; every commit is recorded. */
    function sized(options: {
      maxBatch: number;
      maxBatchSize: number;
      maxWaitMs?: number;
      alone?: (item: number) => boolean;
    }) {
      const batches: number[][] = [];
      let release: () => void = () => {};
      let held = Promise.resolve();
      const committer = new GroupCommitter<number, string>({
        maxBatch: options.maxBatch,
        maxWaitMs: options.maxWaitMs ?? 50,
        concurrency: 1,
        size: (item) => Math.abs(item),
        maxBatchSize: options.maxBatchSize,
        ...(options.alone ? { alone: options.alone } : {}),
        commit: async (items) => {
          batches.push([...items]);
          await held;
          return items.map((item) => `done ${item}`);
        },
      });
      const hold = () => {
        held = new Promise<void>((resolve) => {
          release = resolve;
        });
      };
      return { committer, batches, hold, release: () => release() };
    }

    it('closes a batch before its items would weigh more than maxBatchSize', async () => {
      const { committer, batches } = sized({ maxBatch: 100, maxBatchSize: 10 });
      await Promise.all([4, 4, 4, 1, 6, 3, 2].map((n) => committer.submit(n)));
      expect(batches).toEqual([[4, 4], [4, 1], [6, 3], [2]]);
    });

    it('bounds the batch that goes around items committed alone the same way', async () => {
      const { committer, batches, hold, release } = sized({
        maxBatch: 100,
        maxBatchSize: 10,
        alone: (item) => item < 0,
      });
      hold();
      const first = committer.submit(1);
      await new Promise((resolve) => setTimeout(resolve, 80));
      const rest = [4, -1, 4, 4].map((n) => committer.submit(n));
      release();
      await Promise.all([first, ...rest]);
      // The head goes first with what fits beside it; the lone item then, and the rest after.
      expect(batches).toEqual([[1], [4, 4], [-1], [4]]);
    });

    it('commits an item heavier than maxBatchSize by itself, never refusing it', async () => {
      const { committer, batches } = sized({ maxBatch: 100, maxBatchSize: 10 });
      const results = await Promise.all([3, 25, 2].map((n) => committer.submit(n)));
      expect(results).toEqual(['done 3', 'done 25', 'done 2']);
      expect(batches).toEqual([[3], [25], [2]]);
    });

    it('leaves at once once the waiting items reach maxBatchSize, without waiting maxWait', async () => {
      const { committer, batches } = sized({ maxBatch: 100, maxBatchSize: 10, maxWaitMs: 10_000 });
      const started = performance.now();
      await Promise.all([6, 5].map((n) => committer.submit(n)).slice(0, 1));
      expect(performance.now() - started).toBeLessThan(5_000);
      expect(batches[0]).toEqual([6]);
      await committer.drain();
    });
  });
});
