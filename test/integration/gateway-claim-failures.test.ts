import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase, type TestDatabase } from '../support/database.ts';
import { post, standardWebhook } from '../support/deliveries.ts';
import { SW_SECRET, startTestGateway, type TestGateway } from '../support/gateway.ts';

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
  const jobs = await db.pool.query(
    `SELECT count(*)::int AS n FROM pgboss.job WHERE data->>'eventId' = ANY($1)`,
    [eventIds],
  );
  return { rows: rows.rows[0].n, jobs: jobs.rows[0].n };
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

describe('a claim that fails is never acknowledged', () => {
  it('rolls back a claim that fails after its insert: 503, no row, no job; the retry succeeds', async () => {
    const poison = standardWebhook(SW_SECRET);
    await injectFault(poison.eventId, 'insert');
    const reply = await post(`${gateway.url}/webhooks/alpha`, poison);
    expect(reply.status).toBe(503);
    expect(reply.headers['retry-after']).toBeDefined();
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
    const replies = await Promise.all(
      [poison, ...neighbours].map((d) => post(`${gateway.url}/webhooks/alpha`, d)),
    );
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

  it('refuses a payload PostgreSQL cannot store with 422, without failing its neighbours', async () => {
    // Valid JSON with a NUL escape: jsonb cannot hold it, and no retry will change that.
    const unstorable = standardWebhook(SW_SECRET, { body: '{"type":"thing.updated","text":"a\\u0000b"}' });
    const neighbours = Array.from({ length: 10 }, () => standardWebhook(SW_SECRET));
    const replies = await Promise.all(
      [unstorable, ...neighbours].map((d) => post(`${gateway.url}/webhooks/alpha`, d)),
    );
    expect([replies[0]?.status, replies[0]?.json.error]).toEqual([422, 'payload_unstorable']);
    expect(replies.slice(1).every((r) => r.status === 200)).toBe(true);
    expect(await stored([unstorable.eventId])).toEqual({ rows: 0, jobs: 0 });
    expect(await stored(neighbours.map((d) => d.eventId))).toEqual({ rows: 10, jobs: 10 });
  });
});

describe('payloads past PostgreSQL limits', () => {
  it('refuses JSON nested deeper than jsonb allows with 422, alone', async () => {
    const depth = 100_000;
    const deep = standardWebhook(SW_SECRET, {
      body: `{"type":"deep","x":${'['.repeat(depth)}${']'.repeat(depth)}}`,
    });
    const neighbours = Array.from({ length: 10 }, () => standardWebhook(SW_SECRET));
    const replies = await Promise.all(
      [deep, ...neighbours].map((d) => post(`${gateway.url}/webhooks/alpha`, d)),
    );
    expect([replies[0]?.status, replies[0]?.json.error]).toEqual([422, 'payload_unstorable']);
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

  it('refuses an event id longer than the inbox can hold with 400, not an endless 503', async () => {
    const delivery = standardWebhook(SW_SECRET, { eventId: `msg_${'x'.repeat(600)}` });
    const reply = await post(`${gateway.url}/webhooks/alpha`, delivery);
    expect([reply.status, reply.json.error]).toEqual([400, 'event_id_invalid']);
    expect(await stored([delivery.eventId])).toEqual({ rows: 0, jobs: 0 });
  });
});
