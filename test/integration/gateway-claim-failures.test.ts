import type { PgBoss } from 'pg-boss';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createPool } from '../../services/core/db/pool.ts';
import { type Claim, claimBatch } from '../../services/core/inbox/claim.ts';
import { ensureQueues } from '../../services/core/queue/queues.ts';
import { jobsNaming, startBoss } from '../support/apply.ts';
import { claimGate } from '../support/claims.ts';
import { createTestDatabase, type TestDatabase } from '../support/database.ts';
import { type Delivery, post, type Reply, standardWebhook } from '../support/deliveries.ts';
import { SW_SECRET, startTestGateway, type TestGateway, testConfig } from '../support/gateway.ts';

let db: TestDatabase;
let gateway: TestGateway;

beforeAll(async () => {
  db = await createTestDatabase();
  gateway = await startTestGateway(db.url);
});

afterAll(async () => {
  await gateway?.stop();
  await db?.drop();
});

async function stored(eventIds: readonly string[]): Promise<{ rows: number; jobs: number }> {
  const rows = await db.pool.query('SELECT count(*)::int AS n FROM hookgate.inbox WHERE event_id = ANY($1)', [
    eventIds,
  ]);
  return { rows: rows.rows[0].n, jobs: await jobsNaming(db.pool, eventIds) };
}

/**
 * Faults are injected inside PostgreSQL, after the inbox insert: a trigger that raises for
 * one chosen event id, either at the insert or (deferred) at COMMIT.
 */
async function injectFault(eventId: string, when: 'insert' | 'commit'): Promise<void> {
  await db.pool.query(`
    CREATE OR REPLACE FUNCTION hookgate.test_fault() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      IF NEW.event_id = '${eventId}' THEN RAISE EXCEPTION 'injected fault for %', NEW.event_id; END IF;
      RETURN NEW;
    END $$`);
  await db.pool.query('DROP TRIGGER IF EXISTS test_fault ON hookgate.inbox');
  await db.pool.query(
    when === 'insert'
      ? 'CREATE TRIGGER test_fault AFTER INSERT ON hookgate.inbox FOR EACH ROW EXECUTE FUNCTION hookgate.test_fault()'
      : `CREATE CONSTRAINT TRIGGER test_fault AFTER INSERT ON hookgate.inbox DEFERRABLE INITIALLY DEFERRED
         FOR EACH ROW EXECUTE FUNCTION hookgate.test_fault()`,
  );
}

async function clearFault(): Promise<void> {
  await db.pool.query('DROP TRIGGER IF EXISTS test_fault ON hookgate.inbox');
}

/**
 * Posts `deliveries` so that they share one claim batch, and proves they did: a gateway with one
 * commit slot holds it with a first delivery until the others have queued behind it, then lets
 * go; the batch-size histogram must show exactly one batch of all of them.
 */
async function inOneBatch(deliveries: readonly Delivery[]): Promise<Reply[]> {
  const gate = standardWebhook(SW_SECRET);
  const { hooks, holding, release } = claimGate(gate.eventId);
  const held = await startTestGateway(
    db.url,
    testConfig({ claim: { maxWait: '2ms', concurrency: 1 } }),
    hooks,
  );
  try {
    const first = post(`${held.url}/webhooks/alpha`, gate);
    await holding;
    const replies = Promise.all(deliveries.map((d) => post(`${held.url}/webhooks/alpha`, d)));
    // Long enough for every request to reach the queue; the histogram below checks it did.
    await new Promise((resolve) => setTimeout(resolve, 1_000));
    release();
    expect((await first).status).toBe(200);
    const answered = await replies;
    const metric = await held.registry.getSingleMetric('hookgate_claim_batch_size')?.get();
    const value = (suffix: string) =>
      metric?.values.find(
        (v) => (v as { metricName?: string }).metricName === `hookgate_claim_batch_size${suffix}`,
      )?.value;
    // The premise: two batches, the gate's alone and then all the others together.
    expect([value('_count'), value('_sum')]).toEqual([2, 1 + deliveries.length]);
    return answered;
  } finally {
    release();
    await held.stop();
  }
}

describe('a claim that fails is never acknowledged', () => {
  it('rolls back a claim that fails after its insert: 503, no row, no job; the retry succeeds', async () => {
    const poison = standardWebhook(SW_SECRET);
    await injectFault(poison.eventId, 'insert');
    const reply = await post(`${gateway.url}/webhooks/alpha`, poison);
    expect(reply.status).toBe(503);
    expect(reply.headers['retry-after']).toBe('5');
    expect(reply.json.error).toBe('database_unavailable');
    expect(await stored([poison.eventId])).toEqual({ rows: 0, jobs: 0 });

    await clearFault();
    const retry = await post(`${gateway.url}/webhooks/alpha`, poison);
    expect([retry.status, retry.json.status]).toEqual([200, 'accepted']);
    expect(await stored([poison.eventId])).toEqual({ rows: 1, jobs: 1 });
  });

  it('does not fail the neighbours that share its batch', async () => {
    const poison = standardWebhook(SW_SECRET);
    const neighbours = Array.from({ length: 20 }, () => standardWebhook(SW_SECRET));
    await injectFault(poison.eventId, 'insert');
    const replies = await inOneBatch([poison, ...neighbours]);
    await clearFault();
    expect(replies[0]?.status).toBe(503);
    expect(replies.slice(1).map((r) => r.status)).toEqual(Array(20).fill(200));
    expect(await stored([poison.eventId])).toEqual({ rows: 0, jobs: 0 });
    expect(await stored(neighbours.map((d) => d.eventId))).toEqual({ rows: 20, jobs: 20 });
  });

  it('answers 503 and keeps nothing when COMMIT itself fails', async () => {
    const poison = standardWebhook(SW_SECRET);
    await injectFault(poison.eventId, 'commit');
    const reply = await post(`${gateway.url}/webhooks/alpha`, poison);
    await clearFault();
    expect(reply.status).toBe(503);
    expect(await stored([poison.eventId])).toEqual({ rows: 0, jobs: 0 });
    const retry = await post(`${gateway.url}/webhooks/alpha`, poison);
    expect(retry.status).toBe(200);
    expect(await stored([poison.eventId])).toEqual({ rows: 1, jobs: 1 });
  });

  it('quarantines a payload PostgreSQL cannot store (200), without failing its neighbours', async () => {
    // Valid JSON with a NUL escape: jsonb cannot hold it, and no retry will change that.
    const unstorable = standardWebhook(SW_SECRET, { body: '{"type":"thing.updated","text":"a\\u0000b"}' });
    const neighbours = Array.from({ length: 10 }, () => standardWebhook(SW_SECRET));
    const replies = await inOneBatch([unstorable, ...neighbours]);
    expect([replies[0]?.status, replies[0]?.json.reason]).toEqual([200, 'payload_unstorable']);
    expect(replies.slice(1).every((r) => r.status === 200)).toBe(true);
    expect(await stored([unstorable.eventId])).toEqual({ rows: 0, jobs: 0 });
    expect(await stored(neighbours.map((d) => d.eventId))).toEqual({ rows: 10, jobs: 10 });
  });
});

describe('payloads past PostgreSQL limits', () => {
  it('quarantines JSON nested deeper than jsonb allows (200), alone', async () => {
    const depth = 100_000;
    const deep = standardWebhook(SW_SECRET, {
      body: `{"type":"deep","x":${'['.repeat(depth)}${']'.repeat(depth)}}`,
    });
    const neighbours = Array.from({ length: 10 }, () => standardWebhook(SW_SECRET));
    const replies = await Promise.all(
      [deep, ...neighbours].map((d) => post(`${gateway.url}/webhooks/alpha`, d)),
    );
    expect([replies[0]?.status, replies[0]?.json.reason]).toEqual([200, 'payload_unstorable']);
    expect(replies.slice(1).every((r) => r.status === 200)).toBe(true);
    expect(await stored([deep.eventId])).toEqual({ rows: 0, jobs: 0 });
  });
});

describe('the answer waits for the commit', () => {
  it('sends no 2xx while the claim transaction is still open, and the row is there once it does', async () => {
    let release: () => void = () => {};
    const gate = new Promise<void>((resolve) => {
      release = resolve;
    });
    let reachedCommit = false;
    const held = await startTestGateway(db.url, undefined, {
      beforeCommit: async () => {
        reachedCommit = true;
        await gate;
      },
    });
    try {
      const delivery = standardWebhook(SW_SECRET);
      let answered = false;
      const reply = post(`${held.url}/webhooks/alpha`, delivery).then((r) => {
        answered = true;
        return r;
      });
      while (!reachedCommit) await new Promise((resolve) => setTimeout(resolve, 10));
      // The transaction has written the row and job but not committed: no answer yet, and
      // nothing is visible to anyone else.
      await new Promise((resolve) => setTimeout(resolve, 200));
      expect(answered).toBe(false);
      expect(await stored([delivery.eventId])).toEqual({ rows: 0, jobs: 0 });
      release();
      expect((await reply).status).toBe(200);
      expect(await stored([delivery.eventId])).toEqual({ rows: 1, jobs: 1 });
    } finally {
      release();
      await held.stop();
    }
  });

  it('quarantines an event id longer than the inbox can hold (200), not an endless 503', async () => {
    const delivery = standardWebhook(SW_SECRET, { eventId: `msg_${'x'.repeat(600)}` });
    const reply = await post(`${gateway.url}/webhooks/alpha`, delivery);
    expect([reply.status, reply.json]).toEqual([200, { status: 'quarantined', reason: 'event_id_invalid' }]);
    expect(await stored([delivery.eventId])).toEqual({ rows: 0, jobs: 0 });
  });
});

describe('the savepoint fallback, called directly', () => {
  let boss: PgBoss;
  let pool: ReturnType<typeof createPool>;

  beforeAll(async () => {
    boss = await startBoss(db.url);
    await ensureQueues(boss, ['alpha']);
    pool = createPool({
      connectionString: db.url,
      max: 2,
      statementTimeoutMs: 10_000,
      connectTimeoutMs: 5_000,
      applicationName: 'test-claim-direct',
    });
  });

  afterAll(async () => {
    await boss?.stop({ graceful: false, close: true });
    await pool?.end();
  });

  const claim = (eventId: string, body = '{"type":"thing.updated"}'): Claim => ({
    endpoint: 'alpha',
    provider: 'standard-webhooks',
    event: {
      eventId,
      eventType: 'thing.updated',
      entityType: null,
      entityId: null,
      entityVersion: null,
      headers: {},
    },
    body,
    traceparent: null,
  });

  it('one unstorable and one trigger-refused claim among good ones: each gets its own outcome in one call', async () => {
    const tag = Date.now().toString(36);
    const good = Array.from({ length: 5 }, (_, i) => claim(`direct_${tag}_${i}`));
    const unstorable = claim(`direct_${tag}_nul`, '{"type":"thing.updated","text":"a\\u0000b"}');
    const refused = claim(`direct_${tag}_refused`);
    await injectFault(refused.event.eventId, 'insert');
    // A duplicate of an already stored event rides along too.
    expect((await claimBatch(pool, boss, [good[0]!]))[0]).toEqual({ ok: true, outcome: 'accepted' });
    const batch = [good[0]!, good[1]!, unstorable, good[2]!, refused, good[3]!, good[4]!];
    const results = await claimBatch(pool, boss, batch);
    await clearFault();
    expect(results.map((r) => (r.ok ? r.outcome : r.error.code))).toEqual([
      'duplicate',
      'accepted',
      'payload_unstorable',
      'accepted',
      'database_unavailable',
      'accepted',
      'accepted',
    ]);
    expect(await stored(good.map((c) => c.event.eventId))).toEqual({ rows: 5, jobs: 5 });
    expect(await stored([unstorable.event.eventId, refused.event.eventId])).toEqual({ rows: 0, jobs: 0 });
  });
});
