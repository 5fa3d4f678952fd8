import pg from 'pg';
import type { PgBoss } from 'pg-boss';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Claim, claimBatch } from '../../services/core/inbox/claim.ts';
import { applyQueue } from '../../services/core/queue/names.ts';
import { ensureQueues, retryPolicyFrom } from '../../services/core/queue/queues.ts';
import { WAKEUP_CHANNEL } from '../../services/core/queue/wakeup.ts';
import { startBoss } from '../support/apply.ts';
import { plainClaim } from '../support/claims.ts';
import { createTestDatabase, createTestPool, type TestDatabase } from '../support/database.ts';
import { waitFor, workerConfig } from '../support/worker-harness.ts';

// On this class of machine a round trip to PostgreSQL costs more than the SQL it carries, so the
// ordinary claim is one statement: inbox rows, their jobs and the wake-up, committed together.
// Every statement the claim sends through its pooled connection is counted here.

const ENDPOINT = 'trips';
const config = workerConfig({ [ENDPOINT]: { handler: 'record' } });

let db: TestDatabase;
let boss: PgBoss;
let pool: pg.Pool;
let listener: pg.Client;
const wakeups: string[] = [];
let statements = 0;

beforeAll(async () => {
  db = await createTestDatabase();
  boss = await startBoss(db.url);
  await ensureQueues(boss, [ENDPOINT], retryPolicyFrom(config.worker));
  pool = createTestPool(db.url, 'test-round-trips');
  // Counts what the claim sends through its pooled client (the connection is real).
  const counted = new WeakSet<pg.PoolClient>();
  pool.on('acquire', (client) => {
    if (counted.has(client)) return;
    counted.add(client);
    const query = client.query.bind(client) as (...args: unknown[]) => unknown;
    (client as { query: unknown }).query = (...args: unknown[]) => {
      statements++;
      return query(...args);
    };
  });
  listener = new pg.Client({ connectionString: db.url });
  await listener.connect();
  listener.on('notification', (message) => wakeups.push(message.payload ?? ''));
  await listener.query(`LISTEN ${WAKEUP_CHANNEL}`);
});

afterAll(async () => {
  await listener?.end();
  await pool?.end();
  await boss?.stop({ graceful: false, close: true });
  await db?.drop();
});

const claim = (eventId: string): Claim => plainClaim(ENDPOINT, eventId);

async function counting<T>(fn: () => Promise<T>): Promise<{ result: T; statements: number }> {
  const before = statements;
  const result = await fn();
  return { result, statements: statements - before };
}

/** The states of the apply jobs that name these events, one entry per job. */
async function jobs(eventIds: readonly string[]) {
  const { rows } = await db.pool.query<{ state: string; events: number }>(
    `SELECT j.state::text AS state, count(*)::int AS events
       FROM pgboss.job j CROSS JOIN LATERAL jsonb_array_elements_text(j.data->'eventIds') AS e(event_id)
      WHERE j.name = $1 AND e.event_id = ANY($2::text[])
      GROUP BY j.id, j.state ORDER BY 1`,
    [applyQueue(ENDPOINT), eventIds],
  );
  return rows;
}

describe('the claim', () => {
  it('stores a batch of new deliveries, one job carrying them and the wake-up in one round trip', async () => {
    const ids = Array.from({ length: 20 }, (_, n) => `new_${n}`);
    wakeups.length = 0;
    const { result, statements: sent } = await counting(() => claimBatch(pool, boss, ids.map(claim)));
    expect(result.every((r) => r.ok && r.outcome === 'accepted')).toBe(true);
    expect(sent).toBe(1);
    const rows = await db.pool.query(
      'SELECT count(*)::int AS n FROM hookgate.inbox WHERE event_id = ANY($1)',
      [ids],
    );
    expect(rows.rows[0].n).toBe(20);
    expect(await jobs(ids)).toEqual([{ state: 'created', events: 20 }]);
    await waitFor('the wake-up', async () => wakeups.includes(ENDPOINT), 5_000);
  });

  it("splits an endpoint's rows into jobs of at most eventsPerJob (a worker's batch)", async () => {
    const ids = Array.from({ length: 25 }, (_, n) => `split_${n}`);
    const { result, statements: sent } = await counting(() =>
      claimBatch(pool, boss, ids.map(claim), {}, { eventsPerJob: 10 }),
    );
    expect(result.every((r) => r.ok && r.outcome === 'accepted')).toBe(true);
    expect(sent).toBe(1);
    expect((await jobs(ids)).map((job) => job.events).sort()).toEqual([10, 10, 5]);
  });

  it('answers duplicates (also of events whose job has finished) in one round trip, changing nothing', async () => {
    await claimBatch(pool, boss, [claim('done')]);
    const fetched = await boss.fetch(applyQueue(ENDPOINT), { batchSize: 100 });
    await boss.complete(
      applyQueue(ENDPOINT),
      fetched.map((j) => j.id),
    );
    expect(await jobs(['done'])).toEqual([{ state: 'completed', events: 1 }]);
    const { result, statements: sent } = await counting(() =>
      claimBatch(pool, boss, [claim('done'), claim('new_1'), claim('fresh')]),
    );
    expect(result).toEqual([
      { ok: true, outcome: 'duplicate' },
      { ok: true, outcome: 'duplicate' },
      { ok: true, outcome: 'accepted' },
    ]);
    expect(sent).toBe(1);
    // The duplicates got no job; the new event one of its own.
    expect(await jobs(['done'])).toEqual([{ state: 'completed', events: 1 }]);
    expect(await jobs(['fresh'])).toEqual([{ state: 'created', events: 1 }]);
  });

  it('a redelivery after prune and past the dedupe horizon is a new row with a new job, in one round trip, whatever became of the first job', async () => {
    await claimBatch(pool, boss, [claim('pruned')]);
    const fetched = await boss.fetch(applyQueue(ENDPOINT), { batchSize: 100 });
    await boss.complete(
      applyQueue(ENDPOINT),
      fetched.map((j) => j.id),
    );
    // Its row pruned, and its key too (the keys' own retention, once the horizon has passed).
    await db.pool.query(`DELETE FROM hookgate.inbox WHERE endpoint = $1 AND event_id = 'pruned'`, [ENDPOINT]);
    await db.pool.query(`DELETE FROM hookgate.inbox_keys WHERE endpoint = $1 AND event_id = 'pruned'`, [
      ENDPOINT,
    ]);
    const { result, statements: sent } = await counting(() => claimBatch(pool, boss, [claim('pruned')]));
    expect(result).toEqual([{ ok: true, outcome: 'accepted' }]);
    expect(sent).toBe(1);
    expect(await jobs(['pruned'])).toEqual([
      { state: 'completed', events: 1 },
      { state: 'created', events: 1 },
    ]);
  });

  it('a body that is not one JSON value cannot add rows of its own to the one statement', async () => {
    // The gateway only claims bodies it parsed; this is the fence should another caller not.
    const injected =
      '1},{"ord":1,"endpoint":"trips","event_id":"injected","provider":"x","event_type":"x",' +
      '"entity_type":null,"entity_id":null,"entity_version":null,"headers":{},"traceparent":null,' +
      '"digest_body":false,"queue":"hookgate.apply.trips","dispatch_job":"00000000-0000-8000-8000-000000000001","payload":1';
    const results = await claimBatch(pool, boss, [
      { ...claim('victim'), body: injected },
      claim('neighbour'),
    ]);
    expect(results[1]).toEqual({ ok: true, outcome: 'accepted' });
    expect(results[0]?.ok).toBe(false);
    const rows = await db.pool.query(
      `SELECT event_id FROM hookgate.inbox WHERE event_id IN ('injected', 'victim', 'neighbour') ORDER BY event_id`,
    );
    expect(rows.rows.map((r) => r.event_id)).toEqual(['neighbour']);
  });
});
