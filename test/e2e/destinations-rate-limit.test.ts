import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase, type TestDatabase } from '../support/database.ts';
import { type FakeDownstream, startFakeDownstream } from '../support/fake-downstream.ts';
import {
  Claimer,
  spawnWorkerProcess,
  type WorkerProcess,
  waitFor,
  workerConfig,
  workerConfigDocument,
  writeConfigFile,
} from '../support/worker-harness.ts';

// A destination's rate limit holds across two worker processes, from both sides: the receiver
// never sees more than the bucket allows in any stretch of time, and over the steady 30 s window
// (from the first delivery after the initial burst, once every delivery is written, to the
// last) the rate it saw is within 10 % of the limit. Rates are measured on the receiver's
// timestamps, not the test's clock. The stretch bound allows a second of delivery latency on top
// of the limit; a limit kept per process would let two workers send twice as fast and break both.
//
// Why the lower bound is sound on a loaded machine: the bucket holds BURST tokens (a second's
// worth), so a worker that stalls for less than a second loses no rate (the tokens wait and the
// next claim takes them all); the rate falls short only if both workers stall together for more
// than a second, several times in 30 s. The window's edges cost at most one delivery each (1 of
// 300, well inside 10 %).

const PER_SECOND = 10;
const BURST = 10;
const STEADY_SECONDS = 30;
const EVENTS = BURST + PER_SECOND * STEADY_SECONDS;
const LATENCY_ALLOWANCE_S = 1;

let db: TestDatabase;
let downstream: FakeDownstream;
let claimer: Claimer;
const workers: WorkerProcess[] = [];

beforeAll(async () => {
  db = await createTestDatabase();
  downstream = await startFakeDownstream();
});

afterAll(async () => {
  for (const worker of workers) {
    if (worker.child.exitCode === null && worker.child.signalCode === null) worker.child.kill('SIGKILL');
    await worker.exited;
  }
  await claimer?.stop();
  await downstream?.close();
  await db?.drop();
});

describe('a rate-limited destination with two workers', () => {
  it('gets its rate, within 10 % over 30 s, from both together, and everything in the end', {
    timeout: 180_000,
  }, async () => {
    const endpoints = {
      pay: {
        handler: 'record',
        destinations: {
          limited: {
            url: `${downstream.url}/limited`,
            concurrency: 8,
            rateLimit: { perSecond: PER_SECOND, burst: BURST },
          },
        },
      },
    };
    const configFile = writeConfigFile({
      ...workerConfigDocument(endpoints),
      relay: { pollingInterval: '50ms' },
    });
    claimer = await Claimer.start(db.url, workerConfig(endpoints));
    for (let i = 0; i < 2; i += 1)
      workers.push(spawnWorkerProcess(configFile, db.url, { LOG_LEVEL: 'info' }));
    await waitFor('both workers to start their relays', async () =>
      workers.every((w) => w.output().includes('destination relay started')) ? true : null,
    );
    await claimer.claim(
      'pay',
      Array.from({ length: EVENTS }, (_, n) => ({ eventId: `evt_${n}`, eventType: 'invoice.paid' })),
    );
    await waitFor(
      'every delivery',
      async () => {
        const { rows } = await db.pool.query<{ n: number }>(
          `SELECT count(*)::int AS n FROM hookgate.destination_deliveries WHERE status = 'delivered'`,
        );
        return rows[0]!.n === EVENTS;
      },
      120_000,
    );
    const arrivals = downstream.requests
      .filter((r) => r.path === '/limited')
      .map((r) => r.at)
      .sort((a, b) => a - b);
    expect(arrivals).toHaveLength(EVENTS);
    // Every stretch from one arrival to a later one holds at most what the bucket allows.
    let worst = { excess: Number.NEGATIVE_INFINITY, from: 0, to: 0 };
    for (let i = 0; i < arrivals.length; i += 1) {
      for (let j = i; j < arrivals.length; j += 1) {
        const seconds = (arrivals[j]! - arrivals[i]!) / 1000;
        const excess = j - i + 1 - (BURST + PER_SECOND * (seconds + LATENCY_ALLOWANCE_S));
        if (excess > worst.excess) worst = { excess, from: i, to: j };
      }
    }
    expect(worst.excess, `requests ${worst.from}..${worst.to}`).toBeLessThanOrEqual(0);
    // The steady window: after the initial burst, and once the backlog is complete (every
    // delivery written), so the bucket, not the backlog, sets the pace throughout.
    const { rows: written } = await db.pool.query<{ last: Date }>(
      `SELECT max(created_at) AS last FROM hookgate.destination_deliveries`,
    );
    const backlogComplete = written[0]!.last.getTime();
    const first = arrivals.findIndex((at, i) => i >= BURST && at >= backlogComplete);
    expect(first, 'the window starts early enough to span most of the run').toBeLessThan(BURST + PER_SECOND);
    const windowSeconds = (arrivals.at(-1)! - arrivals[first]!) / 1000;
    const rate = (arrivals.length - 1 - first) / windowSeconds;
    const summary = `${rate.toFixed(2)}/s over ${windowSeconds.toFixed(1)} s (limit ${PER_SECOND}/s)`;
    expect(windowSeconds, summary).toBeGreaterThan(STEADY_SECONDS - 2);
    expect(rate, summary).toBeLessThanOrEqual(PER_SECOND * 1.1);
    expect(rate, summary).toBeGreaterThanOrEqual(PER_SECOND * 0.9);
    console.log(`rate-limited destination, two workers: ${summary}`);
    // Both processes sent some of them (each logs a delivery after recording it: waited for).
    const sentBy = await waitFor('every delivery logged', async () => {
      const counts = workers.map((w) => w.output().split('destination relay: delivered').length - 1);
      return counts.reduce((a, b) => a + b, 0) === EVENTS ? counts : null;
    });
    expect(
      sentBy.every((n) => n > 0),
      `sent per worker: ${sentBy.join(', ')}`,
    ).toBe(true);
  });
});
