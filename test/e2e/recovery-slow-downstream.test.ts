import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase, type TestDatabase } from '../support/database.ts';
import { type FakeDownstream, startFakeDownstream } from '../support/fake-downstream.ts';
import {
  Claimer,
  spawnWorkerProcess,
  statusCounts,
  type WorkerProcess,
  waitFor,
  workerConfig,
  workerConfigDocument,
  writeConfigFile,
} from '../support/worker-harness.ts';

// A downstream that hangs must not slow the apply path: the relay's deliveries are bounded by
// their timeout and run on the relay's own pg-boss workers, and no database connection is held
// while a request waits. Here every relay slot is held by a hanging destination while events of
// another endpoint keep being applied at their usual latency.

let db: TestDatabase;
let claimer: Claimer;
let downstream: FakeDownstream;
let proc: WorkerProcess | null = null;

const HANG_MS = 60_000;
const TIMEOUT = '20s';

beforeAll(async () => {
  db = await createTestDatabase();
  downstream = await startFakeDownstream();
  downstream.fallback = { status: 200, delayMs: HANG_MS };
});

afterAll(async () => {
  proc?.child.kill('SIGKILL');
  await proc?.exited;
  await downstream?.close();
  await claimer?.stop();
  await db?.drop();
});

describe('a slow downstream', { timeout: 120_000 }, () => {
  it('holds every relay slot while apply latency stays bounded', async () => {
    const endpoints = {
      fwd: { handler: 'forward', options: { url: `${downstream.url}/hang`, timeout: TIMEOUT } },
      things: { handler: 'record' },
    };
    const worker = { batchSize: 20, concurrency: 2 };
    claimer = await Claimer.start(db.url, workerConfig(endpoints, worker));
    const configFile = writeConfigFile(workerConfigDocument(endpoints, worker));
    proc = spawnWorkerProcess(configFile, db.url);
    await claimer.claim(
      'fwd',
      Array.from({ length: 60 }, (_, i) => ({ eventId: `f_${i}` })),
    );
    // The premise: the relay is saturated by requests the downstream does not answer.
    const hanging = await downstream.waitFor('/hang', 20, 30_000);
    expect(hanging.length).toBeGreaterThanOrEqual(20);
    expect((await statusCounts(db.pool, 'fwd')).processed).toBe(60);

    for (let round = 0; round < 10; round += 1) {
      await claimer.claim(
        'things',
        Array.from({ length: 20 }, (_, i) => ({ eventId: `t_${round}_${i}` })),
      );
      await new Promise((r) => setTimeout(r, 500));
    }
    await waitFor(
      'all applied',
      async () => (await statusCounts(db.pool, 'things')).processed === 200,
      30_000,
    );
    const { rows } = await db.pool.query<{ p99: number; max: number }>(
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
