import { Registry } from 'prom-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { FinishedAttempt } from '../../services/core/destinations/deliveries.ts';
import { routesFrom } from '../../services/core/destinations/routes.ts';
import { createLogger } from '../../services/core/logging.ts';
import { createFinisher } from '../../services/worker/destination-finisher.ts';
import {
  createDestinationMetrics,
  type RunningDestinationRelay,
  startDestinationRelay,
} from '../../services/worker/destinations.ts';
import { type ByteReceiver, startByteReceiver } from '../support/byte-receiver.ts';
import { createTestDatabase, type TestDatabase } from '../support/database.ts';
import {
  Claimer,
  startTestWorker,
  type TestWorker,
  waitFor,
  workerConfig,
} from '../support/worker-harness.ts';

// When an attempt's record fails anyway (a trigger, a constraint, whatever the database refuses),
// it fails alone: the records written in the same statement are written each on their own, the
// failing one gets a minimal record (its status, none of the receiver's text), and the failure is
// counted. When not even that can be written, the delivery's lease runs out and it is sent again,
// but never more often than its retry limit allows: the attempt was counted when it was claimed,
// and the claim that finds the budget spent ends the delivery `dead` instead of sending it.

const RETRY = { limit: 2, backoff: '100ms', max: '100ms', jitter: 0 };
const ATTEMPTS = RETRY.limit + 1;
const COUNTING_BREAKER = { failures: 1000, cooldown: '1h' };

let db: TestDatabase;
let receiver: ByteReceiver;
let claimer: Claimer;
let worker: TestWorker;
let relay: RunningDestinationRelay;
const registry = new Registry();

beforeAll(async () => {
  db = await createTestDatabase();
  receiver = await startByteReceiver((path) =>
    path === '/healthy'
      ? { status: 200, body: Buffer.from('ok') }
      : { status: 503, body: Buffer.from(path === '/poisoned' ? 'poison' : 'unavailable') },
  );
  // What the database refuses here: any record saying "poison" (the full record of the poisoned
  // destination's attempts, not its minimal one), and every record of the doomed destination's
  // attempts but those a claim writes for an attempt whose result never came.
  await db.pool.query(`
    CREATE FUNCTION hookgate.test_refuse_records() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      IF NEW.error LIKE '%poison%' THEN
        RAISE EXCEPTION 'test: a record this database refuses';
      END IF;
      IF EXISTS (SELECT 1 FROM hookgate.destination_deliveries d
                  WHERE d.id = NEW.delivery_id AND d.destination = 'doomed')
         AND coalesce(NEW.error, '') NOT LIKE 'no result was recorded%' THEN
        RAISE EXCEPTION 'test: no record of this destination can be written';
      END IF;
      RETURN NEW;
    END $$;
    CREATE TRIGGER test_refuse_records BEFORE INSERT OR UPDATE ON hookgate.destination_attempts
      FOR EACH ROW EXECUTE FUNCTION hookgate.test_refuse_records();`);
  const config = workerConfig({
    pay: {
      handler: 'record',
      destinations: {
        healthy: { url: `${receiver.url}/healthy`, retry: RETRY },
        poisoned: { url: `${receiver.url}/poisoned`, retry: RETRY, breaker: COUNTING_BREAKER },
        doomed: {
          url: `${receiver.url}/doomed`,
          retry: RETRY,
          breaker: COUNTING_BREAKER,
          filter: { types: ['doomed.*'] },
        },
      },
    },
  });
  claimer = await Claimer.start(db.url, config);
  worker = await startTestWorker(db.url, config);
  relay = startDestinationRelay({
    pool: worker.pool,
    routes: routesFrom(config),
    logger: createLogger('silent'),
    metrics: createDestinationMetrics(registry),
    pollIntervalMs: 20,
  });
});

afterAll(async () => {
  await relay?.stop();
  await worker?.stop();
  await claimer?.stop();
  await receiver?.close();
  await db?.drop();
});

const counted = async (name: string, labels: Record<string, string>) => {
  const metric = await registry.getSingleMetric(name)?.get();
  return (
    metric?.values
      .filter((v) => Object.entries(labels).every(([key, value]) => v.labels[key] === value))
      .reduce((sum, v) => sum + v.value, 0) ?? 0
  );
};

const deliveries = async (destination: string) =>
  (
    await db.pool.query<{
      id: string;
      event_id: string;
      status: string;
      attempts: number;
      last_error: string | null;
    }>(
      `SELECT id::text AS id, event_id, status, attempts, last_error FROM hookgate.destination_deliveries
        WHERE destination = $1 ORDER BY event_id`,
      [destination],
    )
  ).rows;

const sentTo = (path: string) => receiver.requests.filter((r) => r.path === path);

describe('an attempt whose record the database refuses', () => {
  it('fails alone: the rest of its statement is written, it gets a minimal record, and it is counted', async () => {
    const events = ['evt_1', 'evt_2', 'evt_3'];
    await claimer.claim(
      'pay',
      events.map((eventId) => ({ eventId, eventType: 'invoice.paid' })),
    );
    const poisoned = await waitFor('the poisoned deliveries to end', async () => {
      const found = await deliveries('poisoned');
      return found.length === events.length && found.every((row) => row.status === 'dead') ? found : null;
    });
    const healthy = await waitFor('the healthy deliveries', async () => {
      const found = await deliveries('healthy');
      return found.length === events.length && found.every((row) => row.status === 'delivered')
        ? found
        : null;
    });
    expect(healthy.map((row) => row.attempts)).toEqual([1, 1, 1]);
    expect(
      sentTo('/healthy')
        .map((r) => r.eventId)
        .sort(),
    ).toEqual(events);
    expect(poisoned.map((row) => row.attempts)).toEqual([ATTEMPTS, ATTEMPTS, ATTEMPTS]);
    for (const eventId of events) {
      expect(sentTo('/poisoned').filter((r) => r.eventId === eventId)).toHaveLength(ATTEMPTS);
    }
    const { rows: records } = await db.pool.query<{
      error: string;
      http_status: number;
      response_bytes: Buffer | null;
    }>(
      `SELECT a.error, a.http_status, a.response_bytes FROM hookgate.destination_attempts a
         JOIN hookgate.destination_deliveries d ON d.id = a.delivery_id
        WHERE d.destination = 'poisoned'`,
    );
    expect(records).toHaveLength(events.length * ATTEMPTS);
    for (const record of records) {
      expect(record).toEqual({
        error:
          "HTTP 503; the attempt's full record could not be written (SQLSTATE P0001), so the answer is not kept",
        http_status: 503,
        response_bytes: null,
      });
    }
    // Counted after the record and the breaker's count: waited for, not raced.
    await waitFor('every poisoned attempt counted', async () =>
      (await counted('hookgate_destination_bookkeeping_failures_total', { destination: 'poisoned' })) ===
      events.length * ATTEMPTS
        ? true
        : null,
    );
    expect(await counted('hookgate_destination_bookkeeping_failures_total', { destination: 'healthy' })).toBe(
      0,
    );
    await waitFor('the breaker to count every poisoned attempt', async () => {
      const { rows: breaker } = await db.pool.query<{ consecutive_failures: number }>(
        `SELECT consecutive_failures FROM hookgate.destination_breaker WHERE destination = 'poisoned'`,
      );
      return breaker[0]?.consecutive_failures === events.length * ATTEMPTS ? true : null;
    });
  });

  it('when nothing can be recorded, is sent again as its lease runs out, never more than its retry limit allows, and ends dead with every attempt shown', async () => {
    await claimer.claim('pay', [{ eventId: 'evt_doomed', eventType: 'doomed.thing' }]);
    const row = async () => (await deliveries('doomed'))[0];
    // Each attempt's record fails whole (the delivery's row stays `sending` under its lease):
    // the lease is run out by backdating it, rather than waited for, after every attempt.
    for (let sent = 1; sent <= ATTEMPTS; sent += 1) {
      await waitFor(`attempt ${sent} to be sent`, async () => {
        const now = await row();
        return sentTo('/doomed').length === sent && now?.status === 'sending' && now.attempts === sent
          ? true
          : null;
      });
      await db.pool.query(
        `UPDATE hookgate.destination_deliveries SET lease_until = now() - interval '1 second'
          WHERE destination = 'doomed'`,
      );
    }
    // Either it ends, or (were the attempts counted only as they are recorded) it is sent again.
    await waitFor('the doomed delivery to end or be sent once more', async () => {
      const now = await row();
      return now?.status === 'dead' || sentTo('/doomed').length > ATTEMPTS ? true : null;
    });
    const dead = (await row())!;
    // The claim that found its budget spent ended it without sending: the receiver saw the first
    // attempt and its two retries, and nothing after.
    expect(sentTo('/doomed')).toHaveLength(ATTEMPTS);
    expect(dead.status).toBe('dead');
    expect(dead.attempts).toBe(ATTEMPTS);
    expect(dead.last_error).toMatch(/^its retries are spent/);
    const { rows: shown } = await db.pool.query<{ attempt: number; unrecorded: boolean; error: string }>(
      `SELECT a.attempt, a.unrecorded, a.error FROM hookgate.destination_attempts a
         JOIN hookgate.destination_deliveries d ON d.id = a.delivery_id
        WHERE d.destination = 'doomed' ORDER BY a.attempt`,
    );
    expect(shown.map((a) => [a.attempt, a.unrecorded])).toEqual([
      [1, true],
      [2, true],
      [3, true],
    ]);
    expect(shown[0]!.error).toMatch(/^no result was recorded for this attempt: its lease ran out first/);
    // The breaker heard of every attempt all the same (counted after the record: waited for).
    await waitFor('the breaker to count every doomed attempt', async () => {
      const { rows: breaker } = await db.pool.query<{ consecutive_failures: number }>(
        `SELECT consecutive_failures FROM hookgate.destination_breaker WHERE destination = 'doomed'`,
      );
      return breaker[0]?.consecutive_failures === ATTEMPTS ? true : null;
    });
    expect(
      await counted('hookgate_destination_deliveries_total', { destination: 'doomed', outcome: 'dead' }),
    ).toBe(1);
    expect(
      await counted('hookgate_destination_deliveries_total', {
        destination: 'doomed',
        outcome: 'unrecorded',
      }),
    ).toBe(ATTEMPTS);
  });
});

describe('the finisher', () => {
  it("writes each attempt of a failed statement on its own: one attempt's record never fails another's", async () => {
    const { rows: made } = await db.pool.query<{ id: string }>(
      `INSERT INTO hookgate.destination_deliveries
         (endpoint, destination, event_id, event_type, webhook_id, status, attempts, lease_until)
       SELECT 'pay', 'direct', 'evt_f' || n, 'x', 'msg_f' || n, 'sending', 1, now() + interval '1 hour'
         FROM generate_series(1, 3) AS n
       RETURNING id::text AS id`,
    );
    const attempt = (
      id: string,
      error: string | null,
      status: FinishedAttempt['status'],
    ): FinishedAttempt => ({
      id,
      attempt: 1,
      status,
      httpStatus: status === 'delivered' ? 200 : 500,
      error,
      retryInSeconds: 60,
      startedAt: new Date(),
      durationMs: 3,
      responseHead: error,
      responseBytes: error === null ? null : Buffer.from([0, 1, 2]),
      responseHeaders: null,
    });
    const finisher = createFinisher(db.pool);
    // The first goes alone; the two queued meanwhile share the next statement, which the raw NUL
    // (text PostgreSQL refuses, 22021) fails.
    const [first, bad, good] = await Promise.all([
      finisher.finish(attempt(made[0]!.id, null, 'delivered')),
      finisher.finish(attempt(made[1]!.id, 'HTTP 500: raw \u0000 byte', 'retrying')),
      finisher.finish(attempt(made[2]!.id, null, 'delivered')),
    ]);
    expect(first).toEqual({ written: true, failure: null });
    expect(good).toEqual({ written: true, failure: null });
    expect(bad?.written).toBe(true);
    expect(bad?.failure).toMatch(/^22021: invalid byte sequence/);
    const { rows } = await db.pool.query(
      `SELECT d.event_id, d.status, a.error, a.response_bytes IS NULL AS no_bytes
         FROM hookgate.destination_deliveries d JOIN hookgate.destination_attempts a ON a.delivery_id = d.id
        WHERE d.destination = 'direct' ORDER BY d.event_id`,
    );
    expect(rows).toEqual([
      { event_id: 'evt_f1', status: 'delivered', error: null, no_bytes: true },
      {
        event_id: 'evt_f2',
        status: 'retrying',
        error:
          "HTTP 500; the attempt's full record could not be written (SQLSTATE 22021), so the answer is not kept",
        no_bytes: true,
      },
      { event_id: 'evt_f3', status: 'delivered', error: null, no_bytes: true },
    ]);
  });
});
