import type pg from 'pg';
import type { PgBoss } from 'pg-boss';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Claim, claimBatch, claimDocument } from '../../services/core/inbox/claim.ts';
import { CLAIM_STATEMENT_NAME } from '../../services/core/inbox/claim-sql.ts';
import { applyQueue } from '../../services/core/queue/names.ts';
import { ensureQueues, retryPolicyFrom } from '../../services/core/queue/queues.ts';
import { startBoss } from '../support/apply.ts';
import { plainClaim } from '../support/claims.ts';
import { createTestDatabase, createTestPool, type TestDatabase } from '../support/database.ts';
import { workerConfig } from '../support/worker-harness.ts';

// The claim is a named prepared statement: each gateway connection plans it once, usually while
// the tables are still small, and PostgreSQL then reuses that plan (or one made for the sizes
// of its last ANALYZE). A plan that reads a table from end to end would cost each claim more as
// the inbox and the job table grow. Here the plan is made on empty tables, the tables then grow
// to tens of thousands of rows, and one claim must still read a few dozen pages, not thousands.

const ENDPOINT = 'plans';
const config = workerConfig({ [ENDPOINT]: { handler: 'record' } });
const GROWN_ROWS = 60_000;

let db: TestDatabase;
let boss: PgBoss;
let pool: pg.Pool;

beforeAll(async () => {
  db = await createTestDatabase();
  boss = await startBoss(db.url);
  await ensureQueues(boss, [ENDPOINT], retryPolicyFrom(config.worker));
  // One connection, so every claim below runs on the connection that prepared the statement.
  pool = createTestPool(db.url, 'test-claim-plan', 1);
}, 60_000);

afterAll(async () => {
  await pool?.end();
  await boss?.stop({ graceful: false, close: true });
  await db?.drop();
});

const claim = (eventId: string): Claim =>
  plainClaim(ENDPOINT, eventId, { body: JSON.stringify({ id: eventId, data: { amount: 100 } }) });

let serial = 0;
/** A batch of new deliveries and duplicates of earlier ones, as the gateway sends under load. */
function batch(size: number): Claim[] {
  const claims: Claim[] = [];
  for (let n = 0; n < size; n += 1) {
    serial += 1;
    claims.push(claim(n % 5 === 4 && serial > 10 ? `evt_${serial - 7}` : `evt_${serial}`));
  }
  return claims;
}

/** Grows the inbox and the job table by GROWN_ROWS settled events each, without ANALYZE. */
async function grow(): Promise<void> {
  await db.pool.query(
    `INSERT INTO hookgate.inbox (endpoint, event_id, provider, event_type, payload, headers, status, processed_at)
     SELECT $1, 'old_' || n, 'standard-webhooks', 'thing.updated', jsonb_build_object('id', n), '{}', 'processed', now()
       FROM generate_series(1, $2::int) AS n`,
    [ENDPOINT, GROWN_ROWS],
  );
  await db.pool.query(
    `INSERT INTO pgboss.job (id, name, data, state, completed_on)
     SELECT gen_random_uuid(), $1, jsonb_build_object('n', n), 'completed', now()
       FROM generate_series(1, $2::int) AS n`,
    [applyQueue(ENDPOINT), GROWN_ROWS],
  );
}

interface Plan {
  readonly text: string;
  readonly buffers: number;
}

/** Runs one claim through the prepared statement under EXPLAIN, on the connection that prepared it. */
async function explainClaim(mode: 'auto' | 'force_generic_plan'): Promise<Plan> {
  const client = await pool.connect();
  try {
    await client.query(`SET plan_cache_mode = ${mode}`);
    const claims = batch(20);
    // EXPLAIN takes no bound parameters: the document goes in as a quoted literal.
    const { rows } = await client.query<{ 'QUERY PLAN': string }>(
      `EXPLAIN (ANALYZE, BUFFERS, COSTS OFF, TIMING OFF) EXECUTE ${CLAIM_STATEMENT_NAME}(${client.escapeLiteral(claimDocument(claims))}, ${claims.length}, true)`,
    );
    await client.query('RESET plan_cache_mode');
    const text = rows.map((row) => row['QUERY PLAN']).join('\n');
    // The top node's buffers count every page the statement touched.
    const first = /Buffers: shared hit=(\d+)(?: read=(\d+))?(?: dirtied=(\d+))?/.exec(text);
    return { text, buffers: Number(first?.[1] ?? 0) + Number(first?.[2] ?? 0) };
  } finally {
    client.release();
  }
}

describe('the claim statement planned on empty tables', () => {
  it('still looks rows up by index once the inbox and the job table are large', async () => {
    // Plans made now see empty tables; more than five runs let PostgreSQL switch to its generic plan.
    for (let n = 0; n < 8; n += 1) {
      const results = await claimBatch(pool, boss, batch(20));
      expect(results.every((result) => result.ok)).toBe(true);
    }
    const small = await explainClaim('force_generic_plan');

    await grow();
    // The premise: both tables are now far larger than when the plan was made.
    const sizes = await db.pool.query<{ inbox: number; jobs: number }>(
      `SELECT (SELECT count(*)::int FROM hookgate.inbox) AS inbox, (SELECT count(*)::int FROM pgboss.job) AS jobs`,
    );
    expect(sizes.rows[0]!.inbox).toBeGreaterThanOrEqual(GROWN_ROWS);
    expect(sizes.rows[0]!.jobs).toBeGreaterThanOrEqual(GROWN_ROWS);
    for (const mode of ['auto', 'force_generic_plan'] as const) {
      const plan = await explainClaim(mode);
      expect(plan.text, plan.text).not.toMatch(/Seq Scan on (job|job_common|inbox)\b/);
      // A claim of 20 touches each index a few levels deep per row; a scan of either grown
      // table alone would read well over a thousand pages.
      expect(plan.buffers, plan.text).toBeLessThan(small.buffers + 400);
    }

    // And after ANALYZE has told PostgreSQL the new sizes (autovacuum does this in production).
    await db.pool.query('ANALYZE hookgate.inbox; ANALYZE pgboss.job');
    const analysed = await explainClaim('auto');
    expect(analysed.text, analysed.text).not.toMatch(/Seq Scan on (job|job_common|inbox)\b/);
    expect(analysed.buffers, analysed.text).toBeLessThan(small.buffers + 400);
  }, 120_000);
});
