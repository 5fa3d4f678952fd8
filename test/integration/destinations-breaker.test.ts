import { Registry } from 'prom-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Config } from '../../services/core/config/schema.ts';
import { registerDestinationGauges } from '../../services/core/destinations/metrics.ts';
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

// The circuit breaker against a real failing server, on a clock the test moves (the relay's
// timed statements take their now from it) and one relay pass at a time: three failures open it;
// while open nothing is sent (the deliveries keep their retries), up to the cooldown's last
// millisecond; at its end one probe goes out; a failed probe opens it again for another cooldown,
// a successful one closes it and the rest flows. The shipped 30 s cooldown costs no time here.

const COOLDOWN_MS = 30_000;
const EVENTS = 5;

let db: TestDatabase;
let downstream: FakeDownstream;
let claimer: Claimer;
let worker: TestWorker;
let config: Config;
let clock: DrivenClock;
let sender: DestinationSender;
const registry = new Registry();

beforeAll(async () => {
  db = await createTestDatabase();
  downstream = await startFakeDownstream();
  config = workerConfig({
    pay: {
      handler: 'record',
      destinations: {
        flaky: {
          url: `${downstream.url}/flaky`,
          concurrency: 1,
          retry: { limit: 20, backoff: '100ms', max: '100ms', jitter: 0 },
          breaker: { failures: 3, cooldown: `${COOLDOWN_MS}ms` },
        },
      },
    },
  });
  claimer = await Claimer.start(db.url, config);
  worker = await startTestWorker(db.url, config);
  registerDestinationGauges(registry, { db: db.pool, routes: routesFrom(config), cacheMs: 0 });
});

afterAll(async () => {
  await sender?.close();
  await worker?.stop();
  await claimer?.stop();
  await downstream?.close();
  await db?.drop();
});

async function breakerState(): Promise<string | undefined> {
  const metric = await registry.getSingleMetric('hookgate_destination_breaker_state')?.get();
  return metric?.values.find((v) => v.value === 1)?.labels.state as string | undefined;
}

async function openedAt(): Promise<Date> {
  const { rows } = await db.pool.query<{ opened_at: Date }>(
    `SELECT opened_at FROM hookgate.destination_breaker WHERE destination = 'flaky'`,
  );
  return rows[0]!.opened_at;
}

const sent = () => downstream.requests.filter((r) => r.path === '/flaky').length;
const pass = () => sender.runOnce('pay', 'flaky');

describe('a destination breaker', () => {
  it('opens after consecutive failures, sends nothing until its cooldown ends, probes then, and closes on a good probe', async () => {
    expect(await breakerState()).toBe('closed');
    // Three failures open it; the first probe fails too; the second probe succeeds.
    downstream.script('/flaky', [500, 500, 500, 503]);
    await claimer.claim(
      'pay',
      Array.from({ length: EVENTS }, (_, n) => ({ eventId: `evt_${n}`, eventType: 'invoice.paid' })),
    );
    await waitFor('the deliveries to be written', async () => {
      const { rows } = await db.pool.query<{ n: number }>(
        `SELECT count(*)::int AS n FROM hookgate.destination_deliveries`,
      );
      return rows[0]!.n === EVENTS;
    });
    clock = await DrivenClock.fromDatabase(db.pool, 1_000);
    sender = createDestinationSender({
      pool: worker.pool,
      routes: routesFrom(config),
      logger: createLogger('silent'),
      now: clock.now,
    });

    for (let failure = 1; failure <= 3; failure += 1) {
      const result = await pass();
      expect(result.gate).toBe('closed');
      expect(result.attempts.map((a) => a.status)).toEqual(['retrying']);
      if (failure < 3) clock.advance(1_000);
    }
    expect(await breakerState()).toBe('open');
    const opened = await openedAt();
    expect(opened).toEqual(clock.now());

    // Open: nothing is sent, every delivery due, until the cooldown's last millisecond.
    for (const after of [0, 1, COOLDOWN_MS / 2, COOLDOWN_MS - 1]) {
      clock.setTo(opened, after);
      const closed = await pass();
      expect(closed, `${after} ms after it opened`).toMatchObject({ gate: 'open', attempts: [] });
      // The relay's loop sleeps until the cooldown ends (or its polling interval, if sooner).
      expect(closed.waitMs).toBeCloseTo(COOLDOWN_MS - after, 3);
    }
    expect(sent()).toBe(3);

    // The cooldown over: one probe. It fails, and opens the breaker for another cooldown.
    clock.setTo(opened, COOLDOWN_MS);
    const probe = await pass();
    expect(probe.gate).toBe('probe');
    expect(probe.attempts.map((a) => a.status)).toEqual(['retrying']);
    const reopened = await openedAt();
    expect(reopened).toEqual(clock.now());
    clock.setTo(reopened, COOLDOWN_MS - 1);
    expect(await pass()).toMatchObject({ gate: 'open', attempts: [] });
    expect(sent()).toBe(4);

    // The next probe succeeds: closed, and the rest flows.
    clock.setTo(reopened, COOLDOWN_MS);
    const good = await pass();
    expect(good.gate).toBe('probe');
    expect(good.attempts.map((a) => a.status)).toEqual(['delivered']);
    expect(await breakerState()).toBe('closed');
    for (let n = 0; n < EVENTS * 2 && sent() < 4 + EVENTS; n += 1) {
      clock.advance(1_000);
      const result = await pass();
      expect(result.gate).toBe('closed');
    }
    const { rows } = await db.pool.query<{ delivered: number; attempts: number }>(
      `SELECT count(*) FILTER (WHERE status = 'delivered')::int AS delivered, sum(attempts)::int AS attempts
         FROM hookgate.destination_deliveries`,
    );
    // 4 failures and one success per event: no attempt was spent while the breaker was open.
    expect(rows).toEqual([{ delivered: EVENTS, attempts: 4 + EVENTS }]);
    expect(sent()).toBe(4 + EVENTS);
    const { rows: breaker } = await db.pool.query(
      `SELECT state, consecutive_failures FROM hookgate.destination_breaker WHERE destination = 'flaky'`,
    );
    expect(breaker).toEqual([{ state: 'closed', consecutive_failures: 0 }]);
  });
});
