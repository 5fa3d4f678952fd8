import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Config } from '../../services/core/config/schema.ts';
import { routesFrom } from '../../services/core/destinations/routes.ts';
import { createLogger } from '../../services/core/logging.ts';
import { createDestinationSender, type DestinationSender } from '../../services/worker/destinations.ts';
import { createTestDatabase, type TestDatabase } from '../support/database.ts';
import { DrivenClock } from '../support/driven-clock.ts';
import { type FakeDownstream, startFakeDownstream } from '../support/fake-downstream.ts';
import {
  Claimer,
  startTestWorker,
  type TestWorker,
  waitFor,
  workerConfig,
} from '../support/worker-harness.ts';

// The breaker's rate rule against a real server that fails every other request, on a clock the
// test moves, one relay pass at a time: the failures are never consecutive (breaker.failures is
// 3, the longest run is 1), yet once 5 attempts were made in the window and 3 of them failed
// (60 % >= 50 %) the breaker opens: nothing is sent until the cooldown's probe, whose success
// closes it and empties the window. The window is fixed from its first attempt: attempts of a
// window that ended count no more.

const COOLDOWN_MS = 30_000;
const WINDOW_MS = 60_000;
const EVENTS = 6;

let db: TestDatabase;
let downstream: FakeDownstream;
let claimer: Claimer;
let worker: TestWorker;
let config: Config;
let clock: DrivenClock;
let sender: DestinationSender;

function destinations(name: string) {
  return {
    url: `${downstream.url}/${name}`,
    concurrency: 1,
    retry: { limit: 20, backoff: '100ms', max: '100ms', jitter: 0 },
    breaker: {
      failures: 3,
      cooldown: `${COOLDOWN_MS}ms`,
      rate: { ratio: 0.5, window: `${WINDOW_MS}ms`, minimum: 5 },
    },
    filter: { types: [`${name}.*`] },
  };
}

beforeAll(async () => {
  db = await createTestDatabase();
  downstream = await startFakeDownstream();
  config = workerConfig({
    pay: {
      handler: 'record',
      destinations: { alternating: destinations('alternating'), slow: destinations('slow') },
    },
  });
  claimer = await Claimer.start(db.url, config);
  worker = await startTestWorker(db.url, config);
});

afterAll(async () => {
  await sender?.close();
  await worker?.stop();
  await claimer?.stop();
  await downstream?.close();
  await db?.drop();
});

const sentTo = (name: string) => downstream.requests.filter((r) => r.path === `/${name}`).length;

async function breaker(name: string) {
  const { rows } = await db.pool.query<{
    state: string;
    consecutive_failures: number;
    rate_attempts: number;
    rate_failures: number;
    opened_at: Date | null;
  }>(
    `SELECT state, consecutive_failures, rate_attempts, rate_failures, opened_at
       FROM hookgate.destination_breaker WHERE destination = $1`,
    [name],
  );
  return rows[0];
}

async function written(type: string, count: number): Promise<void> {
  await waitFor(`${count} ${type} deliveries to be written`, async () => {
    const { rows } = await db.pool.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM hookgate.destination_deliveries WHERE event_type LIKE $1`,
      [`${type}.%`],
    );
    return rows[0]!.n === count;
  });
}

describe('a destination breaker with a rate rule', () => {
  it('opens on alternating failures that never reach the consecutive threshold', async () => {
    downstream.script('/alternating', [500, 200, 500, 200, 500]);
    await claimer.claim(
      'pay',
      Array.from({ length: EVENTS }, (_, n) => ({ eventId: `alt_${n}`, eventType: 'alternating.thing' })),
    );
    await written('alternating', EVENTS);
    clock = await DrivenClock.fromDatabase(db.pool, 1_000);
    sender = createDestinationSender({
      pool: worker.pool,
      routes: routesFrom(config),
      logger: createLogger('silent'),
      now: clock.now,
    });
    const pass = () => sender.runOnce('pay', 'alternating');
    const statuses: string[] = [];
    for (let n = 0; n < 5; n += 1) {
      const result = await pass();
      expect(result.gate).toBe('closed');
      statuses.push(...result.attempts.map((a) => a.status));
      clock.advance(1_000);
    }
    expect(statuses).toEqual(['retrying', 'delivered', 'retrying', 'delivered', 'retrying']);
    // Never two failures in a row, yet 3 of 5 attempts failed: open.
    const opened = await breaker('alternating');
    expect(opened).toMatchObject({ state: 'open', consecutive_failures: 1 });
    // Deliveries are due all along; none is sent until the cooldown's end.
    clock.setTo(opened!.opened_at!, COOLDOWN_MS - 1);
    expect(await pass()).toMatchObject({ gate: 'open', attempts: [] });
    expect(sentTo('alternating')).toBe(5);
    clock.setTo(opened!.opened_at!, COOLDOWN_MS);
    const probe = await pass();
    expect(probe.gate).toBe('probe');
    expect(probe.attempts.map((a) => a.status)).toEqual(['delivered']);
    for (let n = 0; n < EVENTS * 2 && sentTo('alternating') < 3 + EVENTS; n += 1) {
      clock.advance(1_000);
      expect((await pass()).gate).toBe('closed');
    }
    // 3 failures and one success per event: no attempt was spent while the breaker was open.
    const { rows } = await db.pool.query<{ attempts: number; delivered: number }>(
      `SELECT sum(attempts)::int AS attempts, count(*) FILTER (WHERE status = 'delivered')::int AS delivered
         FROM hookgate.destination_deliveries WHERE destination = 'alternating'`,
    );
    expect(rows).toEqual([{ attempts: 3 + EVENTS, delivered: EVENTS }]);
    // The successful probe closed it and emptied its window.
    expect(await breaker('alternating')).toMatchObject({
      state: 'closed',
      consecutive_failures: 0,
      rate_failures: 0,
    });
  });

  it('counts a window from its first attempt: failures of a window that ended do not count', async () => {
    downstream.script('/slow', [500, 200, 500, 200, 500, 200, 200]);
    await claimer.claim(
      'pay',
      Array.from({ length: 4 }, (_, n) => ({ eventId: `slow_${n}`, eventType: 'slow.thing' })),
    );
    await written('slow', 4);
    clock.advance(1_000);
    const pass = () => sender.runOnce('pay', 'slow');
    // Four attempts (2 failures) in the first window, the last one at its last millisecond.
    const first = clock.now();
    for (const at of [0, 1_000, 2_000, WINDOW_MS - 1]) {
      clock.setTo(first, at);
      expect((await pass()).attempts).toHaveLength(1);
    }
    expect(await breaker('slow')).toMatchObject({ state: 'closed', rate_attempts: 4, rate_failures: 2 });
    // The window ended: its fifth attempt (a failure, 3 of 5 had it counted on) starts a new one.
    clock.setTo(first, WINDOW_MS);
    expect((await pass()).attempts.map((a) => a.status)).toEqual(['retrying']);
    expect(await breaker('slow')).toMatchObject({ state: 'closed', rate_attempts: 1, rate_failures: 1 });
  });
});
