import { describe, expect, it } from 'vitest';
import { type FakeDownstream, startFakeDownstream } from '../support/fake-downstream.ts';
import { statusCounts, waitFor } from '../support/worker-harness.ts';
import { useWorkerStack } from '../support/worker-stack.ts';

// A downstream that hangs must not slow the apply path: a destination's deliveries are bounded
// by its timeout and run in its own slots, and no database connection is held while a request
// waits. Here every slot of a destination is held by requests the downstream does not answer
// while events of another endpoint keep being applied at their usual latency.

const HANG_MS = 60_000;
const TIMEOUT = '20s';
let downstream: FakeDownstream;

const stack = useWorkerStack({
  setup: async () => {
    downstream = await startFakeDownstream();
    downstream.fallback = { status: 200, delayMs: HANG_MS };
    stack.defer(() => downstream.close());
  },
  endpoints: () => ({
    out: {
      handler: 'record',
      destinations: { hang: { url: `${downstream.url}/hang`, timeout: TIMEOUT, concurrency: 20 } },
    },
    things: { handler: 'record' },
  }),
  worker: { batchSize: 20, concurrency: 2 },
  stopSignal: 'SIGKILL',
});

describe('a slow downstream', { timeout: 120_000 }, () => {
  it('holds every slot of its destination while apply latency stays bounded', async () => {
    const proc = stack.spawnWorker();
    await stack.claimer.claim(
      'out',
      Array.from({ length: 60 }, (_, i) => ({ eventId: `f_${i}` })),
    );
    // The premise: the destination's slots are all taken by requests the downstream does not answer.
    const hanging = await downstream.waitFor('/hang', 20, 30_000);
    expect(hanging.length).toBeGreaterThanOrEqual(20);
    expect((await statusCounts(stack.db.pool, 'out')).processed).toBe(60);

    for (let round = 0; round < 10; round += 1) {
      await stack.claimer.claim(
        'things',
        Array.from({ length: 20 }, (_, i) => ({ eventId: `t_${round}_${i}` })),
      );
      await new Promise((r) => setTimeout(r, 500));
    }
    await waitFor(
      'all applied',
      async () => (await statusCounts(stack.db.pool, 'things')).processed === 200,
      30_000,
    );
    const { rows } = await stack.db.pool.query<{ p99: number; max: number }>(
      `SELECT percentile_cont(0.99) WITHIN GROUP (ORDER BY extract(epoch FROM processed_at - received_at)) AS p99,
              max(extract(epoch FROM processed_at - received_at))::float8 AS max
         FROM hookgate.inbox WHERE endpoint = 'things'`,
    );
    console.log(
      `apply latency while the relay hangs: p99 ${rows[0]!.p99.toFixed(3)} s, max ${rows[0]!.max.toFixed(3)} s`,
    );
    // Still hanging (no request answered yet): the comparison happened under the premise.
    expect(downstream.requests.filter((r) => r.path === '/hang').length).toBeGreaterThanOrEqual(20);
    expect(rows[0]!.max).toBeLessThan(2);
    expect(proc.child.exitCode).toBeNull();
  });
});
