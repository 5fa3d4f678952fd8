import pg from 'pg';
import type { PgBoss } from 'pg-boss';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createForwardHandler } from '../../services/core/handlers/forward.ts';
import { createBoss } from '../../services/core/queue/boss.ts';
import { outboxJobIdFor, outboxQueue } from '../../services/core/queue/names.ts';
import type { OutboxQueueSettings } from '../../services/core/queue/queues.ts';
import { startRelays } from '../../services/worker/relay.ts';
import { applyEvent, silentLogger, startBoss } from '../support/apply.ts';
import { createTestDatabase, type TestDatabase } from '../support/database.ts';
import { type FakeDownstream, startFakeDownstream } from '../support/fake-downstream.ts';
import { waitFor } from '../support/worker-harness.ts';

// Two attempts of one downstream delivery overlap for real: attempt A's relay is starved of
// database connections after its request (as a stalled or overloaded process would be) until
// its lease and its job have both expired; attempt B (another relay) takes the job and the
// record over and delivers. A's late result must not overwrite B's `delivered`, or a replay
// would send the effect downstream again.

const ENDPOINT = 'orders';
/**
 * Jobs expire 2 s after they start, so B gets A's job while A is still stuck; B's tries while A's
 * lease still holds are retried every 2 s until it has run out.
 */
const QUEUES: OutboxQueueSettings = {
  retryLimit: 8,
  retryDelaySeconds: 2,
  retryBackoff: false,
  retryDelayMaxSeconds: 0,
  expireInSeconds: 2,
};

let db: TestDatabase;
let downstream: FakeDownstream;
let senderBoss: PgBoss;
let bossA: PgBoss;
let bossB: PgBoss;
let poolA: pg.Pool;
let held: pg.PoolClient | undefined;
const relays: { stop(): Promise<void> }[] = [];

beforeAll(async () => {
  db = await createTestDatabase();
  downstream = await startFakeDownstream();
  senderBoss = await startBoss(db.url);
  bossA = await startBoss(db.url);
  bossB = createBoss({
    connectionString: db.url,
    max: 4,
    supervise: true,
    superviseIntervalSeconds: 1,
    applicationName: 'test-relay-b',
  });
  bossB.on('error', () => {});
  await bossB.start();
  // One connection: whoever holds it starves relay A's bookkeeping.
  poolA = new pg.Pool({ connectionString: db.url, max: 1 });
});

afterAll(async () => {
  held?.release();
  for (const relay of relays) await relay.stop();
  await poolA?.end();
  for (const boss of [bossA, bossB, senderBoss]) await boss?.stop({ graceful: false, close: true });
  await downstream?.close();
  await db?.drop();
});

async function delivery(key: string) {
  const { rows } = await db.pool.query(
    `SELECT status, attempts, http_status FROM hookgate.outbox_deliveries WHERE kind = 'forward' AND key = $1`,
    [key],
  );
  return rows[0] as { status: string; attempts: number; http_status: number | null } | undefined;
}

async function forward(eventId: string, path: string): Promise<void> {
  const handler = createForwardHandler(
    { url: `${downstream.url}${path}`, timeout: '1s' },
    { endpoint: ENDPOINT, logger: silentLogger, configDir: process.cwd() },
  );
  await applyEvent(db.pool, senderBoss, handler, {
    endpoint: ENDPOINT,
    eventId,
    provider: 'github',
    eventType: 'order.placed',
    entityType: 'order',
    entityId: 'o_1',
    entityVersion: null,
    payload: { id: eventId, order: { id: 'o_1' } },
    headers: {},
    receivedAt: new Date(),
    attempts: 1,
    traceparent: null,
  });
}

describe('relay: overlapping attempts', { timeout: 60_000 }, () => {
  it('a late attempt cannot overwrite delivered with retrying, and a replay does not send again', async () => {
    const eventId = 'evt_overlap';
    const key = `${ENDPOINT}:${eventId}`;
    const queue = outboxQueue('forward');
    // A's request is answered 503 after a moment; B's (the second) 200.
    downstream.script('/late', [{ status: 503, delayMs: 300 }, 200]);

    relays.push(
      await startRelays({
        boss: bossA,
        pool: poolA,
        logger: silentLogger,
        queues: QUEUES,
        pollingIntervalSeconds: 0.5,
      }),
    );
    await forward(eventId, '/late');
    await downstream.waitFor('/late', 1);
    // A has begun its attempt and sent; from now on it cannot write its result.
    held = await poolA.connect();
    // A fetches nothing more: the retried job must go to B.
    await bossA.offWork(queue, { wait: false });
    expect(await delivery(key)).toMatchObject({ status: 'sending', attempts: 1 });
    // The premise: A is stuck waiting to record its 503.
    await waitFor('attempt A waiting for a connection', async () => poolA.waitingCount === 1, 5_000);

    relays.push(
      await startRelays({
        boss: bossB,
        pool: db.pool,
        logger: silentLogger,
        queues: QUEUES,
        pollingIntervalSeconds: 0.5,
      }),
    );
    // The premise: B took the record over once A's lease (1 s timeout + 5 s) ran out, and delivered.
    const delivered = await waitFor(
      'attempt B delivered',
      async () => {
        const row = await delivery(key);
        return row?.status === 'delivered' ? row : null;
      },
      30_000,
    );
    expect(delivered).toMatchObject({ attempts: 2, http_status: 200 });
    expect(downstream.requests.filter((r) => r.path === '/late')).toHaveLength(2);
    expect(poolA.waitingCount).toBe(1);

    // A comes back and records its late 503.
    held.release();
    held = undefined;
    await waitFor(
      'attempt A finished',
      async () => poolA.waitingCount === 0 && poolA.idleCount === poolA.totalCount,
      10_000,
    );
    expect(await delivery(key)).toMatchObject({ status: 'delivered', attempts: 2, http_status: 200 });

    // Replayed after the job is gone: the record says delivered, so nothing is sent.
    await waitFor('job settled', async () => {
      const job = await bossB.getJobById(queue, outboxJobIdFor('forward', key));
      return job?.state === 'completed';
    });
    await db.pool.query('DELETE FROM pgboss.job WHERE name = $1 AND id = $2', [
      queue,
      outboxJobIdFor('forward', key),
    ]);
    await forward(eventId, '/late');
    const replayed = await waitFor('replayed job completed', async () => {
      const job = await bossB.getJobById(queue, outboxJobIdFor('forward', key));
      return job?.state === 'completed' ? job : null;
    });
    expect(replayed.output).toMatchObject({ outcome: 'duplicate', previously: 'delivered' });
    expect(downstream.requests.filter((r) => r.path === '/late')).toHaveLength(2);
  });
});
