import type { PgBoss } from 'pg-boss';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createForwardHandler } from '../../services/core/handlers/forward.ts';
import type { InboxEvent } from '../../services/core/handlers/types.ts';
import { outboxJobIdFor, outboxQueue } from '../../services/core/queue/names.ts';
import { startRelays } from '../../services/worker/relay.ts';
import { applyEvent, silentLogger, startBoss } from '../support/apply.ts';
import { createTestDatabase, type TestDatabase } from '../support/database.ts';
import { type FakeDownstream, startFakeDownstream } from '../support/fake-downstream.ts';

// Event ids and types are the provider's text; HTTP header values are not any text (no CR/LF or
// other controls, nothing above U+00FF through fetch). The relay copied them into
// x-hookgate-event-id, x-hookgate-event-type and Idempotency-Key; fetch refused the request,
// the refusal was classed retryable, and the event burned its retries and went dead.
const ENDPOINT = 'orders';
const deps = { endpoint: ENDPOINT, logger: silentLogger, configDir: process.cwd() };

let db: TestDatabase;
let boss: PgBoss;
let downstream: FakeDownstream;
let relay: { stop(): Promise<void> };

beforeAll(async () => {
  db = await createTestDatabase();
  boss = await startBoss(db.url);
  downstream = await startFakeDownstream();
  relay = await startRelays({
    boss,
    pool: db.pool,
    logger: silentLogger,
    queues: {
      retryLimit: 3,
      retryDelaySeconds: 1,
      retryBackoff: false,
      retryDelayMaxSeconds: 1,
      expireInSeconds: 30,
    },
    pollingIntervalSeconds: 0.5,
    stopTimeoutMs: 500,
  });
});

afterAll(async () => {
  await relay?.stop();
  await downstream?.close();
  await boss?.stop({ graceful: false, close: true });
  await db?.drop();
});

function event(eventId: string, eventType: string): InboxEvent {
  return {
    endpoint: ENDPOINT,
    eventId,
    provider: 'github',
    eventType,
    entityType: null,
    entityId: null,
    entityVersion: null,
    payload: { id: eventId },
    headers: {},
    receivedAt: new Date(),
    attempts: 1,
    traceparent: null,
  };
}

async function settled(key: string) {
  const deadline = Date.now() + 20_000;
  for (;;) {
    const { rows } = await db.pool.query(
      `SELECT status, attempts, last_error FROM hookgate.outbox_deliveries WHERE kind = 'forward' AND key = $1`,
      [key],
    );
    if (rows[0] && ['delivered', 'dead'].includes(rows[0].status)) return rows[0];
    if (Date.now() > deadline) throw new Error(`the delivery of ${JSON.stringify(key)} did not settle`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

async function forward(path: string, e: InboxEvent, url = `${downstream.url}${path}`) {
  const handler = createForwardHandler({ url, timeout: '2s' }, deps);
  expect(await applyEvent(db.pool, boss, handler, e)).toBe('processed');
}

describe('relay: event ids and types that are not legal header values', () => {
  it.each([
    ['CR/LF', 'evt-1\r\nx-injected: 1', 'issues\r\nopened'],
    ['ESC', 'evt-2\u001b[31m', 'issues.\u001b]0;owned\u0007'],
    ['above U+00FF', 'évt-3-✓-😀', 'заказ.создан'],
    ['a percent sign', 'evt-4-%41', 'type with %20 and spaces'],
  ])(
    '%s: delivered at the first attempt, the values percent-encoded (UTF-8) and given back by decodeURIComponent',
    async (_what, id, type) => {
      const path = `/values-${encodeURIComponent(id).slice(0, 12)}`;
      const key = `${ENDPOINT}:${id}`;
      await forward(path, event(id, type));
      expect(await settled(key)).toMatchObject({ status: 'delivered', attempts: 1, last_error: null });
      const [request] = await downstream.waitFor(path, 1);
      const headers = request!.headers;
      expect(headers['x-injected']).toBeUndefined();
      expect(headers['x-hookgate-event-id']).not.toBe(id);
      expect(decodeURIComponent(String(headers['x-hookgate-event-id']))).toBe(id);
      expect(decodeURIComponent(String(headers['x-hookgate-event-type']))).toBe(type);
      expect(decodeURIComponent(String(headers['idempotency-key']))).toBe(key);
      for (const name of ['x-hookgate-event-id', 'x-hookgate-event-type', 'idempotency-key']) {
        expect(String(headers[name])).toMatch(/^[\x21-\x7e]+$/);
      }
    },
  );

  it('printable ASCII without % is sent exactly as it is', async () => {
    const id = 'evt_plain-5:a/b';
    await forward('/plain', event(id, 'order placed'));
    await settled(`${ENDPOINT}:${id}`);
    const [request] = await downstream.waitFor('/plain', 1);
    expect(request!.headers['x-hookgate-event-id']).toBe(id);
    expect(request!.headers['x-hookgate-event-type']).toBe('order placed');
    expect(request!.headers['idempotency-key']).toBe(`${ENDPOINT}:${id}`);
  });

  it('two keys that differ only by an illegal character and its escape stay two keys', async () => {
    const a = 'evt-6-\n';
    const b = 'evt-6-%0A';
    await forward('/distinct', event(a, 't'));
    await forward('/distinct', event(b, 't'));
    await settled(`${ENDPOINT}:${a}`);
    await settled(`${ENDPOINT}:${b}`);
    const keys = (await downstream.waitFor('/distinct', 2)).map((r) => r.headers['idempotency-key']);
    expect(new Set(keys).size).toBe(2);
  });

  it('a request that cannot be built is dead at its first attempt, with the reason, and never retried', async () => {
    // fetch refuses a URL with credentials in it: waiting does not make it buildable.
    const withCredentials = downstream.url.replace('http://', 'http://user:password@');
    await forward('/never', event('evt-7', 't'), `${withCredentials}/never`);
    const key = `${ENDPOINT}:evt-7`;
    const row = await settled(key);
    expect(row).toMatchObject({ status: 'dead', attempts: 1 });
    expect(row.last_error).toMatch(/^the request could not be built: /);
    // The record is written just before pg-boss settles the job: wait for the job to leave `active`.
    const deadline = Date.now() + 20_000;
    let job: { state: string; retry_count: number } | undefined;
    for (;;) {
      const { rows } = await db.pool.query(
        'SELECT state, retry_count FROM pgboss.job WHERE name = $1 AND id = $2',
        [outboxQueue('forward'), outboxJobIdFor('forward', key)],
      );
      job = rows[0];
      if ((job && job.state !== 'active') || Date.now() > deadline) break;
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    expect(job).toMatchObject({ state: 'failed', retry_count: 0 });
    await new Promise((resolve) => setTimeout(resolve, 1_500));
    expect(downstream.requests.filter((r) => r.path.startsWith('/never'))).toHaveLength(0);
  });
});
