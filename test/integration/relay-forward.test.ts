import type { PgBoss } from 'pg-boss';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createForwardHandler } from '../../services/core/handlers/forward.ts';
import type { InboxEvent } from '../../services/core/handlers/types.ts';
import { outboxDeadLetterQueue, outboxJobIdFor, outboxQueue } from '../../services/core/queue/names.ts';
import type { OutboxQueueSettings } from '../../services/core/queue/queues.ts';
import { startRelays } from '../../services/worker/relay.ts';
import { applyEvent, silentLogger, startBoss } from '../support/apply.ts';
import { createTestDatabase, type TestDatabase } from '../support/database.ts';
import { type FakeDownstream, startFakeDownstream } from '../support/fake-downstream.ts';

const ENDPOINT = 'orders';
const deps = { endpoint: ENDPOINT, logger: silentLogger, configDir: process.cwd() };
/** Short delays so a file stays fast: immediate retries, polled every half second. */
const QUEUES: OutboxQueueSettings = {
  retryLimit: 3,
  retryDelaySeconds: 0,
  retryBackoff: false,
  retryDelayMaxSeconds: 0,
  expireInSeconds: 30,
};

let db: TestDatabase;
let boss: PgBoss;
let downstream: FakeDownstream;
let relay: { stop(): Promise<void> };
let counter = 0;

function orderEvent(eventId = `evt_${Date.now().toString(36)}_${++counter}`): InboxEvent {
  return {
    endpoint: ENDPOINT,
    eventId,
    provider: 'github',
    eventType: 'order.placed',
    entityType: 'order',
    entityId: 'o_1',
    entityVersion: null,
    payload: { id: eventId, type: 'order.placed', order: { id: 'o_1', total: 42 } },
    headers: {},
    receivedAt: new Date(),
    attempts: 1,
    traceparent: null,
  };
}

/** Applies the forward handler for `event` in a real transaction; its outbox job commits with it. */
async function forward(event: InboxEvent, path: string, options: Record<string, unknown> = {}) {
  const handler = createForwardHandler({ url: `${downstream.url}${path}`, timeout: '2s', ...options }, deps);
  return applyEvent(db.pool, boss, handler, event);
}

async function delivery(key: string) {
  const { rows } = await db.pool.query(
    `SELECT status, attempts, http_status, last_error, url FROM hookgate.outbox_deliveries
      WHERE kind = 'forward' AND key = $1`,
    [key],
  );
  return rows[0];
}

async function waitUntil<T>(
  probe: () => Promise<T | undefined | false>,
  what: string,
  timeoutMs = 20_000,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

const settledDelivery = (key: string) =>
  waitUntil(async () => {
    const row = await delivery(key);
    return row && ['delivered', 'dead', 'nowhere'].includes(row.status) ? row : undefined;
  }, `the delivery of ${key} to settle`);

async function job(kind: string, key: string) {
  const { rows } = await db.pool.query(
    'SELECT state, retry_count, output FROM pgboss.job WHERE name = $1 AND id = $2',
    [outboxQueue(kind), outboxJobIdFor(kind, key)],
  );
  return rows[0];
}

const jobState = (kind: string, key: string, state: string) =>
  waitUntil(async () => {
    const found = await job(kind, key);
    return found?.state === state ? found : undefined;
  }, `outbox job ${key} to be ${state}`);

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

const relayOptions = () => ({
  boss,
  pool: db.pool,
  logger: silentLogger,
  queues: QUEUES,
  pollingIntervalSeconds: 0.5,
  stopTimeoutMs: 500,
});

beforeAll(async () => {
  db = await createTestDatabase();
  boss = await startBoss(db.url);
  downstream = await startFakeDownstream();
  relay = await startRelays(relayOptions());
});

afterAll(async () => {
  await relay?.stop();
  await downstream?.close();
  await boss?.stop({ graceful: false, close: true });
  await db?.drop();
});

describe('relay: forward', () => {
  it('500, 500, then 200 → delivered once, the same Idempotency-Key on every try', async () => {
    const event = orderEvent();
    const key = `${ENDPOINT}:${event.eventId}`;
    downstream.script('/flaky', [500, 500, 200]);
    expect(await forward(event, '/flaky')).toBe('processed');
    const row = await settledDelivery(key);
    expect(row).toMatchObject({ status: 'delivered', attempts: 3, http_status: 200 });
    await sleep(1_200);
    const requests = downstream.requests.filter((r) => r.path === '/flaky');
    expect(requests).toHaveLength(3);
    for (const request of requests) {
      expect(request.headers['idempotency-key']).toBe(key);
      expect(request.headers['content-type']).toBe('application/json');
      expect(request.headers['x-hookgate-event-id']).toBe(event.eventId);
      expect(JSON.parse(request.body)).toEqual(event.payload);
    }
    expect(await job('forward', key)).toMatchObject({ state: 'completed', retry_count: 2 });
  });

  it('400 → dead at once: one request, recorded dead, moved to the dead-letter queue', async () => {
    const event = orderEvent();
    const key = `${ENDPOINT}:${event.eventId}`;
    downstream.script('/refuses', [{ status: 400, body: '{"error":"unknown order"}' }]);
    await forward(event, '/refuses');
    const row = await settledDelivery(key);
    expect(row).toMatchObject({ status: 'dead', attempts: 1, http_status: 400 });
    expect(row.last_error).toContain('HTTP 400: {"error":"unknown order"}');
    const dead = await waitUntil(async () => {
      const { rows } = await db.pool.query('SELECT data FROM pgboss.job WHERE name = $1 AND source_id = $2', [
        outboxDeadLetterQueue('forward'),
        outboxJobIdFor('forward', key),
      ]);
      return rows[0];
    }, 'the dead-lettered copy');
    expect(dead.data.key).toBe(key);
    expect(await job('forward', key)).toMatchObject({ state: 'failed' });
    await sleep(1_200);
    expect(downstream.requests.filter((r) => r.path === '/refuses')).toHaveLength(1);
  });

  it('a dead key is tried again when its event is replayed (an operator asking for another try)', async () => {
    const event = orderEvent();
    const key = `${ENDPOINT}:${event.eventId}`;
    downstream.script('/fixed-later', [400, 200]);
    await forward(event, '/fixed-later');
    expect(await settledDelivery(key)).toMatchObject({ status: 'dead', attempts: 1 });
    // The record is written just before pg-boss settles the job; "months later" means after that.
    await jobState('forward', key, 'failed');
    await db.pool.query('DELETE FROM pgboss.job WHERE name = $1 AND id = $2', [
      outboxQueue('forward'),
      outboxJobIdFor('forward', key),
    ]);
    await forward(event, '/fixed-later');
    await waitUntil(async () => (await delivery(key))?.status === 'delivered', 'the replay to be delivered');
    expect(await delivery(key)).toMatchObject({
      status: 'delivered',
      attempts: 2,
      http_status: 200,
      last_error: null,
    });
  });

  it('a dead delivery whose job is still retained is tried again with pg-boss retry()', async () => {
    const event = orderEvent();
    const key = `${ENDPOINT}:${event.eventId}`;
    downstream.script('/retry-by-hand', [403, 200]);
    await forward(event, '/retry-by-hand');
    expect(await settledDelivery(key)).toMatchObject({ status: 'dead', http_status: 403 });
    await jobState('forward', key, 'failed');
    await boss.retry(outboxQueue('forward'), outboxJobIdFor('forward', key));
    await waitUntil(
      async () => (await delivery(key))?.status === 'delivered',
      'the retried job to be delivered',
    );
    expect(downstream.requests.filter((r) => r.path === '/retry-by-hand')).toHaveLength(2);
  });

  it('429 and timeouts are retried like 5xx', async () => {
    const event = orderEvent();
    const key = `${ENDPOINT}:${event.eventId}`;
    downstream.script('/slow', [{ status: 200, delayMs: 1_500 }, 429, 200]);
    await forward(event, '/slow', { timeout: '300ms' });
    const row = await settledDelivery(key);
    expect(row).toMatchObject({ status: 'delivered', attempts: 3, http_status: 200 });
    expect(downstream.requests.filter((r) => r.path === '/slow')).toHaveLength(3);
  });

  it('a downstream that keeps failing → dead after retryLimit + 1 attempts, in the dead-letter queue', async () => {
    const event = orderEvent();
    const key = `${ENDPOINT}:${event.eventId}`;
    downstream.script('/down', [503, 503, 503, 503, 200]);
    await forward(event, '/down');
    const row = await settledDelivery(key);
    expect(row).toMatchObject({ status: 'dead', attempts: 4, http_status: 503 });
    await waitUntil(async () => {
      const { rows } = await db.pool.query('SELECT 1 FROM pgboss.job WHERE name = $1 AND source_id = $2', [
        outboxDeadLetterQueue('forward'),
        outboxJobIdFor('forward', key),
      ]);
      return rows[0];
    }, 'the dead-lettered copy');
    expect(downstream.requests.filter((r) => r.path === '/down')).toHaveLength(4);
  });

  it('a replay after delivery does not send again, even after the job itself is long gone', async () => {
    const event = orderEvent();
    const key = `${ENDPOINT}:${event.eventId}`;
    await forward(event, '/once');
    await settledDelivery(key);
    await jobState('forward', key, 'completed');
    // Replayed while the first job is retained: the deterministic job id makes it a no-op.
    await forward(event, '/once');
    // Replayed months later: pg-boss has deleted the job; a new one is created and the relay
    // finds the key delivered in hookgate.outbox_deliveries.
    await db.pool.query('DELETE FROM pgboss.job WHERE name = $1 AND id = $2', [
      outboxQueue('forward'),
      outboxJobIdFor('forward', key),
    ]);
    await forward(event, '/once');
    const replayed = await waitUntil(async () => {
      const found = await job('forward', key);
      return found?.state === 'completed' ? found : undefined;
    }, 'the replayed job to complete');
    expect(replayed.output).toMatchObject({ outcome: 'duplicate', previously: 'delivered' });
    expect(downstream.requests.filter((r) => r.path === '/once')).toHaveLength(1);
    expect(await delivery(key)).toMatchObject({ status: 'delivered', attempts: 1 });
  });

  it('a refused connection is retried like a 5xx and ends dead with the network error recorded', async () => {
    const event = orderEvent();
    const key = `${ENDPOINT}:${event.eventId}`;
    const gone = await startFakeDownstream();
    const url = gone.url;
    await gone.close();
    const handler = createForwardHandler({ url: `${url}/x` }, deps);
    await applyEvent(db.pool, boss, handler, event);
    const row = await settledDelivery(key);
    expect(row.status).toBe('dead');
    expect(row.last_error).toMatch(/request failed: ECONNREFUSED/);
  });
});

describe('relay: stop', () => {
  it('stop() aborts a delivery still in flight after its bound; the job is retried by the next relay', async () => {
    const event = orderEvent();
    const key = `${ENDPOINT}:${event.eventId}`;
    downstream.script('/hang', [{ status: 200, delayMs: 10_000 }, 200]);
    await forward(event, '/hang', { timeout: '20s' });
    await downstream.waitFor('/hang', 1);
    const started = Date.now();
    await relay.stop();
    expect(Date.now() - started).toBeLessThan(5_000);
    expect(await delivery(key)).toMatchObject({
      status: 'retrying',
      attempts: 1,
      last_error: 'aborted: the relay stopped or the job expired',
    });
    relay = await startRelays(relayOptions());
    expect(await settledDelivery(key)).toMatchObject({ status: 'delivered', attempts: 2 });
  });
});

describe('forward: options', () => {
  it('needs an http(s) url and a valid timeout; errors name the option', () => {
    const attempt = (options: unknown) => () => createForwardHandler(options, deps);
    expect(attempt({})).toThrow(/^orders\.options\.url: is required/);
    expect(attempt({ url: 'mailto:x@y' })).toThrow(/^orders\.options\.url: must be an http\(s\) URL$/);
    expect(attempt({ url: 'http://x', timeout: 10 })).toThrow(/orders\.options\.timeout: /);
    expect(attempt({ url: 'http://x', retries: 3 })).toThrow(/orders\.options\.retries: unknown option/);
  });
});
