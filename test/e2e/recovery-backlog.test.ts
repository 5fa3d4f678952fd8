import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort } from '../../services/core/db/embedded.ts';
import { createTestDatabase, type TestDatabase } from '../support/database.ts';
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

// Catch-up after a long outage of the workers: a backlog claimed while no worker runs drains once
// two start, nothing is lost, and the backlog gauges return to zero. `make test` uses 20 000
// events; `make chaos` runs the full 100 000 (CATCHUP_EVENTS).
const EVENTS = Number(process.env.CATCHUP_EVENTS ?? 20_000);
const DRAIN_MS = Number(process.env.CATCHUP_DRAIN_MS ?? 240_000);

const endpoints = { catchup: { handler: 'record' } };
const worker = { batchSize: 200, concurrency: 2 };

let db: TestDatabase;
let claimer: Claimer;
const procs: WorkerProcess[] = [];

beforeAll(async () => {
  db = await createTestDatabase();
  claimer = await Claimer.start(db.url, workerConfig(endpoints, worker));
});

afterAll(async () => {
  for (const proc of procs) proc.child.kill('SIGKILL');
  await Promise.all(procs.map((proc) => proc.exited));
  await claimer?.stop();
  await db?.drop();
});

async function gauge(port: number, name: string): Promise<number> {
  const text = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
  // The events gauge has a line per status; the pending one is the backlog.
  const line = text
    .split('\n')
    .find(
      (l) =>
        l.startsWith(`${name}{`) &&
        l.includes('endpoint="catchup"') &&
        (name !== 'hookgate_backlog_events' || l.includes('status="pending"')),
    );
  if (!line) throw new Error(`${name} is not reported`);
  return Number(line.split(' ').at(-1));
}

describe('catching up on a backlog', { timeout: DRAIN_MS + 240_000 }, () => {
  it(`${EVENTS} events claimed while no worker runs drain completely; backlog gauges return to zero`, async () => {
    const claimStarted = Date.now();
    const chunk = 2_000;
    for (let i = 0; i < EVENTS; i += chunk) {
      await claimer.claim(
        'catchup',
        Array.from({ length: Math.min(chunk, EVENTS - i) }, (_, j) => ({ eventId: `c_${i + j}` })),
      );
    }
    const claimSeconds = (Date.now() - claimStarted) / 1000;
    // The premise: the whole backlog is pending before any worker starts.
    expect(await statusCounts(db.pool, 'catchup')).toEqual({ pending: EVENTS });

    const metricsPort = await freePort();
    const configFile = writeConfigFile(workerConfigDocument(endpoints, worker));
    procs.push(spawnWorkerProcess(configFile, db.url, { METRICS_PORT: String(metricsPort) }));
    procs.push(spawnWorkerProcess(configFile, db.url));
    const backlogAtStart = await waitFor('the backlog gauge', () =>
      gauge(metricsPort, 'hookgate_backlog_events').catch(() => null),
    );
    const drainStarted = Date.now();
    await waitFor(
      'the backlog drained',
      async () => (await statusCounts(db.pool, 'catchup')).processed === EVENTS,
      DRAIN_MS,
      500,
    );
    const drainSeconds = (Date.now() - drainStarted) / 1000;
    expect(await statusCounts(db.pool, 'catchup')).toEqual({ processed: EVENTS });
    // Every event once, on its first attempt; one job per claim batch of up to batchSize events,
    // every job completed, and no event named by two jobs (none was handed back or sent again).
    const attempts = await db.pool.query(
      `SELECT attempts, count(*)::int AS n FROM hookgate.inbox WHERE endpoint = 'catchup' GROUP BY attempts`,
    );
    expect(attempts.rows).toEqual([{ attempts: 1, n: EVENTS }]);
    const jobs = await db.pool.query<{ state: string; jobs: number; named: number; distinct: number }>(
      `SELECT j.state, count(DISTINCT j.id)::int AS jobs, count(*)::int AS named,
              count(DISTINCT e.event_id)::int AS distinct
         FROM pgboss.job j, jsonb_array_elements_text(j.data->'eventIds') AS e(event_id)
        WHERE j.name = 'hookgate.apply.catchup' GROUP BY j.state`,
    );
    expect(jobs.rows).toEqual([
      { state: 'completed', jobs: Math.ceil(EVENTS / worker.batchSize), named: EVENTS, distinct: EVENTS },
    ]);
    // The gauges saw the backlog and return to zero (they are cached for 5 s).
    expect(backlogAtStart).toBeGreaterThan(0);
    await waitFor(
      'backlog gauges at zero',
      async () =>
        (await gauge(metricsPort, 'hookgate_backlog_events')) === 0 &&
        (await gauge(metricsPort, 'hookgate_backlog_oldest_age_seconds')) === 0,
      20_000,
      500,
    );
    console.log(
      `catch-up: ${EVENTS} events claimed in ${claimSeconds.toFixed(1)} s, drained by 2 workers in ${drainSeconds.toFixed(1)} s (${Math.round(EVENTS / drainSeconds)} events/s); gauges back to 0`,
    );
  });
});
