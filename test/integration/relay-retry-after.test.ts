import type { PgBoss } from 'pg-boss';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createForwardHandler } from '../../services/core/handlers/forward.ts';
import type { InboxEvent } from '../../services/core/handlers/types.ts';
import { outboxJobIdFor, outboxQueue } from '../../services/core/queue/names.ts';
import type { OutboxQueueSettings } from '../../services/core/queue/queues.ts';
import { startRelays } from '../../services/worker/relay.ts';
import { retryAfterSeconds } from '../../services/worker/relay-http.ts';
import { applyEvent, silentLogger, startBoss } from '../support/apply.ts';
import { createTestDatabase, type TestDatabase } from '../support/database.ts';
import { type FakeDownstream, startFakeDownstream } from '../support/fake-downstream.ts';

// A downstream that answers 429 (or 503) with Retry-After gets its next try no sooner than it
// asked, whatever the queue's backoff says (here 1 s), capped at the queue's longest backoff.

const ENDPOINT = 'orders';
const deps = { endpoint: ENDPOINT, logger: silentLogger, configDir: process.cwd() };
const QUEUES: OutboxQueueSettings = {
  retryLimit: 3,
  retryDelaySeconds: 1,
  retryBackoff: false,
  retryDelayMaxSeconds: 6,
  expireInSeconds: 30,
};

let db: TestDatabase;
let boss: PgBoss;
let downstream: FakeDownstream;
let relay: { stop(): Promise<void> };
let counter = 0;

function orderEvent(): InboxEvent {
  const eventId = `evt_ra_${++counter}`;
  return {
    endpoint: ENDPOINT,
    eventId,
    provider: 'github',
    eventType: 'order.placed',
    entityType: 'order',
    entityId: 'o_1',
    entityVersion: null,
    payload: { id: eventId },
    headers: {},
    receivedAt: new Date(),
    attempts: 1,
    traceparent: null,
  };
}

async function forwardTo(path: string): Promise<string> {
  const event = orderEvent();
  const handler = createForwardHandler({ url: `${downstream.url}${path}`, timeout: '2s' }, deps);
  await applyEvent(db.pool, boss, handler, event);
  return `${ENDPOINT}:${event.eventId}`;
}

async function delivered(key: string): Promise<{ status: string; attempts: number }> {
  const deadline = Date.now() + 30_000;
  for (;;) {
    const { rows } = await db.pool.query(
      `SELECT status, attempts FROM hookgate.outbox_deliveries WHERE kind = 'forward' AND key = $1`,
      [key],
    );
    if (rows[0]?.status === 'delivered') return rows[0];
    if (Date.now() > deadline) throw new Error(`${key} not delivered: ${JSON.stringify(rows[0])}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

function gapSeconds(path: string): number {
  const [first, second] = downstream.requests.filter((r) => r.path === path);
  return (second!.at - first!.at) / 1000;
}

beforeAll(async () => {
  db = await createTestDatabase();
  boss = await startBoss(db.url);
  downstream = await startFakeDownstream();
  relay = await startRelays({
    boss,
    pool: db.pool,
    logger: silentLogger,
    queues: QUEUES,
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

describe('relay: Retry-After', { timeout: 60_000 }, () => {
  it('429 with Retry-After: 4 → the next try comes no sooner than 4 s (the backoff says 1 s)', async () => {
    downstream.script('/busy', [{ status: 429, headers: { 'retry-after': '4' } }, 200]);
    const key = await forwardTo('/busy');
    expect(await delivered(key)).toMatchObject({ status: 'delivered', attempts: 2 });
    expect(gapSeconds('/busy')).toBeGreaterThanOrEqual(4);
    const { rows } = await db.pool.query(
      'SELECT state, retry_count FROM pgboss.job WHERE name = $1 AND id = $2',
      [outboxQueue('forward'), outboxJobIdFor('forward', key)],
    );
    // One failed attempt, not two: the relay's own result for the deferred job changed nothing.
    expect(rows[0]).toEqual({ state: 'completed', retry_count: 1 });
  });

  it('503 with an HTTP-date Retry-After is honoured too', async () => {
    const at = new Date(Date.now() + 4_000).toUTCString();
    downstream.script('/maintenance', [{ status: 503, headers: { 'retry-after': at } }, 200]);
    const key = await forwardTo('/maintenance');
    expect(await delivered(key)).toMatchObject({ status: 'delivered', attempts: 2 });
    // The date has whole-second precision, so allow for the second it was rounded down.
    expect(gapSeconds('/maintenance')).toBeGreaterThanOrEqual(3);
  });

  it('a Retry-After beyond the queue’s longest backoff is capped at it', async () => {
    downstream.script('/greedy', [{ status: 429, headers: { 'retry-after': '3600' } }, 200]);
    const key = await forwardTo('/greedy');
    expect(await delivered(key)).toMatchObject({ status: 'delivered', attempts: 2 });
    const gap = gapSeconds('/greedy');
    expect(gap).toBeGreaterThanOrEqual(6);
    expect(gap).toBeLessThan(20);
  });

  it('reads delay-seconds and HTTP-dates, and nothing else', () => {
    const now = Date.parse('2026-11-30T12:00:00Z');
    expect(retryAfterSeconds('120', now)).toBe(120);
    expect(retryAfterSeconds(' 0 ', now)).toBe(0);
    expect(retryAfterSeconds('Mon, 30 Nov 2026 12:00:30 GMT', now)).toBe(30);
    expect(retryAfterSeconds('Mon, 30 Nov 2026 11:00:00 GMT', now)).toBe(0);
    expect(retryAfterSeconds(null, now)).toBeNull();
    expect(retryAfterSeconds('soon', now)).toBeNull();
    expect(retryAfterSeconds('-5', now)).toBeNull();
    expect(retryAfterSeconds('2026', now)).toBe(2026);
  });
});
