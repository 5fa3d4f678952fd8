import type pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Config } from '../../services/core/config/schema.ts';
import { routesFrom } from '../../services/core/destinations/routes.ts';
import { createLogger } from '../../services/core/logging.ts';
import { createDestinationSender, type DestinationSender } from '../../services/worker/destinations.ts';
import { createTestDatabase, createTestPool, type TestDatabase } from '../support/database.ts';
import { DrivenClock } from '../support/driven-clock.ts';
import { type FakeDownstream, startFakeDownstream } from '../support/fake-downstream.ts';
import {
  Claimer,
  startTestWorker,
  type TestWorker,
  waitFor,
  workerConfig,
} from '../support/worker-harness.ts';

// A destination's rate limit is one token bucket in the database shared by every worker: two
// relays (each its own pool, as two worker processes), on a clock the test moves, one pass at a
// time. Whatever the two do, together they start exactly what the bucket holds: `burst` at once,
// then `perSecond` per second of clock, whole tokens only (the fractions kept for later), never
// more than `burst` after a quiet spell; and each pass says how long until its next token. Both
// bounds are exact here, where a run in real time could only show them within a tolerance (and
// failed it on a loaded machine).

const PER_SECOND = 10;
const BURST = 10;
const CONCURRENCY = 8;
const EVENTS = 100;

let db: TestDatabase;
let downstream: FakeDownstream;
let claimer: Claimer;
let worker: TestWorker;
let config: Config;
let clock: DrivenClock;
const pools: pg.Pool[] = [];
const senders: DestinationSender[] = [];

beforeAll(async () => {
  db = await createTestDatabase();
  downstream = await startFakeDownstream();
  config = workerConfig({
    pay: {
      handler: 'record',
      destinations: {
        limited: {
          url: `${downstream.url}/limited`,
          concurrency: CONCURRENCY,
          rateLimit: { perSecond: PER_SECOND, burst: BURST },
        },
      },
    },
  });
  claimer = await Claimer.start(db.url, config);
  worker = await startTestWorker(db.url, config);
});

afterAll(async () => {
  for (const sender of senders) await sender.close();
  for (const pool of pools) await pool.end();
  await worker?.stop();
  await claimer?.stop();
  await downstream?.close();
  await db?.drop();
});

const sent = () => downstream.requests.filter((r) => r.path === '/limited').length;

/** Both relays at once, at the same instant of the clock: what each started, and its token wait. */
async function bothPass(): Promise<{ started: number[]; waits: (number | null)[] }> {
  const results = await Promise.all(senders.map((sender) => sender.runOnce('pay', 'limited')));
  return { started: results.map((r) => r.attempts.length), waits: results.map((r) => r.waitMs) };
}

const total = (started: number[]) => started.reduce((a, b) => a + b, 0);

describe('a rate-limited destination with two relays', () => {
  it('starts exactly what one shared bucket allows, on the clock: burst, then perSecond a second', async () => {
    await claimer.claim(
      'pay',
      Array.from({ length: EVENTS }, (_, n) => ({ eventId: `evt_${n}`, eventType: 'invoice.paid' })),
    );
    await waitFor('every delivery written', async () => {
      const { rows } = await db.pool.query<{ n: number }>(
        `SELECT count(*)::int AS n FROM hookgate.destination_deliveries`,
      );
      return rows[0]!.n === EVENTS;
    });
    clock = await DrivenClock.fromDatabase(db.pool, 1_000);
    for (let i = 0; i < 2; i += 1) {
      const pool = createTestPool(db.url, `relay-${i}`, 4);
      pools.push(pool);
      senders.push(
        createDestinationSender({
          pool,
          routes: routesFrom(config),
          logger: createLogger('silent'),
          now: clock.now,
        }),
      );
    }
    const start = clock.now();

    // A full bucket: both together start the burst, no more (a bucket per relay would give 2×).
    const first = await bothPass();
    expect(total(first.started)).toBe(BURST);
    const again = await bothPass();
    expect(again.started).toEqual([0, 0]);
    // Empty: the next token is a tenth of a second away.
    expect(again.waits).toEqual([100, 100]);

    // A quarter of a second: 2.5 tokens, two whole ones taken, half a token kept.
    clock.advance(250);
    expect(total((await bothPass()).started)).toBe(2);
    const waits = (await bothPass()).waits;
    expect(waits).toEqual([50, 50]);
    clock.advance(50);
    expect(total((await bothPass()).started)).toBe(1);

    // Steady: over any stretch of clock, exactly perSecond a second on top of the burst.
    for (let step = 0; step < 20; step += 1) {
      clock.advance(300);
      await bothPass();
      const elapsed = clock.since(start) / 1000;
      expect(sent(), `${elapsed} s in`).toBe(Math.min(EVENTS, Math.floor(BURST + PER_SECOND * elapsed)));
    }

    // After a quiet hour the bucket holds its burst, not an hour's tokens.
    clock.advance(3_600_000);
    const before = sent();
    expect(total((await bothPass()).started)).toBe(Math.min(BURST, EVENTS - before));
    expect(total((await bothPass()).started)).toBe(0);
  });
});
