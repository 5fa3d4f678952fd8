import { setTimeout as sleep } from 'node:timers/promises';
import { describe, expect, it } from 'vitest';
import { applyQueue } from '../../services/core/queue/names.ts';
import { statusCounts, unfinishedJobs, waitFor } from '../support/worker-harness.ts';
import { useWorkerStack } from '../support/worker-stack.ts';

// A poison event that crashes the worker process itself every time it is applied (a `module:`
// handler that SIGKILLs its own process), while other events keep arriving. Workers are
// restarted whenever they die, as a Deployment would. The poison must stop at its attempt limit
// as `dead`; every other event must be applied exactly once meanwhile.

const POISON_HANDLER = `
export const handler = {
  async apply({ tx }, event) {
    if (event.eventId === 'poison') process.kill(process.pid, 'SIGKILL');
    await tx.query('INSERT INTO public.poison_effects (event_id) VALUES ($1)', [event.eventId]);
  },
};
`;

const endpoints = { poison: { handler: 'module:./poison.mjs' } };
// Fast expiry (3 s) so each crash is noticed within seconds; 4 attempts.
const worker = { retryLimit: 3, batchSize: 10 };
const OTHERS = 100;

const crashes: (number | string)[] = [];

const stack = useWorkerStack({
  endpoints,
  worker,
  setup: async (db) => {
    await db.pool.query('CREATE TABLE public.poison_effects (event_id text NOT NULL)');
  },
  besideConfig: { 'poison.mjs': POISON_HANDLER },
  stopSignal: 'SIGKILL',
});

/** A worker that is started again each time it dies. */
function supervisedWorker(): void {
  if (stack.tearingDown) return;
  const proc = stack.spawnWorker();
  void proc.exited.then((code) => {
    if (stack.tearingDown) return;
    crashes.push(code);
    setTimeout(supervisedWorker, 200);
  });
}

describe('a poison event that crashes the worker', { timeout: 150_000 }, () => {
  it('ends dead at its attempt limit while every other event is applied once', async () => {
    supervisedWorker();
    supervisedWorker();
    await stack.claimer.claim('poison', [{ eventId: 'poison' }]);
    // Other events keep arriving while the poison crashes the workers.
    for (let i = 0; i < OTHERS; i += 10) {
      await stack.claimer.claim(
        'poison',
        Array.from({ length: 10 }, (_, j) => ({ eventId: `other_${i + j}` })),
      );
      await sleep(1_000);
    }
    let last: Record<string, number> = {};
    const settled = await waitFor(
      'the poison settled and the others applied',
      async () => {
        last = await statusCounts(stack.db.pool, 'poison');
        return last.dead === 1 && last.processed === OTHERS ? last : null;
      },
      120_000,
    ).catch((error: Error) => {
      throw new Error(`${error.message}: ${JSON.stringify(last)}, crashes ${JSON.stringify(crashes)}`);
    });
    expect(settled).toEqual({ dead: 1, processed: OTHERS });
    const { rows } = await stack.db.pool.query(
      `SELECT attempts, last_error FROM hookgate.inbox WHERE endpoint = 'poison' AND event_id = 'poison'`,
    );
    expect(rows[0].attempts).toBe(worker.retryLimit + 1);
    // Its job ran out of tries, each one lost with its worker; the sweeper ended the row so.
    expect(rows[0].last_error).toMatch(/^worker_lost:/);
    const { rows: jobs } = await stack.db.pool.query(
      `SELECT j.state::text AS state, j.retry_count FROM hookgate.inbox i
         JOIN pgboss.job j ON j.name = $1 AND j.id = i.dispatch_job
        WHERE i.endpoint = 'poison' AND i.event_id = 'poison'`,
      [applyQueue('poison')],
    );
    expect(jobs).toEqual([{ state: 'failed', retry_count: worker.retryLimit }]);
    // The premise: the poison itself killed a worker on each of its attempts, and no more. A
    // sentinel through the same queue: once it is applied and the queue has nothing left to run,
    // a further attempt at the poison (which would crash a worker) would have been made.
    await stack.claimer.claim('poison', [{ eventId: 'sentinel' }]);
    await waitFor(
      'the sentinel applied',
      async () => (await statusCounts(stack.db.pool, 'poison')).processed === OTHERS + 1,
    );
    await waitFor('nothing left to run', async () => (await unfinishedJobs(stack.db.pool, 'poison')) === 0);
    expect(crashes.filter((c) => c === 'SIGKILL')).toHaveLength(worker.retryLimit + 1);
    expect(crashes.every((c) => c === 'SIGKILL')).toBe(true);
    // Every other event applied exactly once.
    const effects = await stack.db.pool.query<{ event_id: string; n: number }>(
      'SELECT event_id, count(*)::int AS n FROM public.poison_effects GROUP BY event_id',
    );
    expect(effects.rows).toHaveLength(OTHERS + 1);
    expect(effects.rows.every((r) => r.n === 1)).toBe(true);
    const neighbours = await stack.db.pool.query<{ n: number; most: number }>(
      `SELECT count(*) FILTER (WHERE attempts > 1)::int AS n, max(attempts)::int AS most
         FROM hookgate.inbox WHERE endpoint = 'poison' AND event_id NOT IN ('poison', 'sentinel')`,
    );
    console.log(
      `poison: ${crashes.length} worker crashes; ${neighbours.rows[0]!.n} of ${OTHERS} other events lost an attempt to a crash`,
    );
    // Once a worker has died applying the poison alone, it runs with nothing else in flight in its
    // process: a neighbour can lose only the poison's first two attempts (in a batch, then alone
    // beside other work), whatever the fetch order.
    expect(neighbours.rows[0]!.most).toBeLessThanOrEqual(3);
  });
});
