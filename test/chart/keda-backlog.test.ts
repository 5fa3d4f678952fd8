import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { applyRoles } from '../../services/core/db/roles.ts';
import { createTestDatabase, type TestDatabase } from '../support/database.ts';
import { withParentIndexNames } from '../support/plans.ts';
import { find, type Manifest, render, scenarioFile } from './tools.ts';

// The KEDA trigger's query, as rendered, run against the migrated schema: it counts exactly the
// pending rows and is answered from the inbox's partial index on pending rows, so its cost follows
// the backlog, not the history.
let db: TestDatabase;
let query: string;

beforeAll(async () => {
  db = await createTestDatabase();
  const manifests: Manifest[] = await render({ valuesFiles: [scenarioFile('keda-values.yaml')] });
  const scaled = find(manifests, 'ScaledObject', 'hookgate-worker');
  const triggers = (scaled.spec as { triggers: { type: string; metadata: { query: string } }[] }).triggers;
  expect(triggers.map((trigger) => trigger.type)).toEqual(['postgresql']);
  query = triggers[0]?.metadata.query ?? '';
});

afterAll(async () => {
  await db?.drop();
});

describe("the worker's KEDA backlog query", () => {
  it('counts pending events only', async () => {
    await db.pool.query(
      `INSERT INTO hookgate.inbox (endpoint, event_id, provider, event_type, payload, status)
       SELECT 'stripe', 'evt_' || n, 'stripe', 'invoice.paid', '{}'::jsonb,
              (ARRAY['pending', 'processed', 'dead', 'pending'])[1 + n % 4]
         FROM generate_series(1, 400) AS n`,
    );
    const result = await db.pool.query<{ count: string }>(query);
    expect(Number(result.rows[0]?.count)).toBe(200);
  });

  it("leaves out a paused endpoint's pending events (held, not work for more workers)", async () => {
    await db.pool.query(
      `INSERT INTO hookgate.inbox (endpoint, event_id, provider, event_type, payload, status)
       SELECT 'paused', 'evt_' || n, 'stripe', 'invoice.paid', '{}'::jsonb, 'pending'
         FROM generate_series(1, 50) AS n`,
    );
    await db.pool.query(
      `INSERT INTO hookgate.endpoint_state (endpoint, paused_at, paused_by) VALUES ('paused', now(), 'alice')`,
    );
    expect(Number((await db.pool.query<{ count: string }>(query)).rows[0]?.count)).toBe(200);
    // Resumed, its events count again.
    await db.pool.query(`UPDATE hookgate.endpoint_state SET paused_at = NULL WHERE endpoint = 'paused'`);
    expect(Number((await db.pool.query<{ count: string }>(query)).rows[0]?.count)).toBe(250);
    await db.pool.query(`UPDATE hookgate.endpoint_state SET paused_at = now() WHERE endpoint = 'paused'`);
  });

  it('is answered from the partial index inbox_pending_idx', async () => {
    const client = await db.pool.connect();
    try {
      // A small table favours a sequential scan; the question is whether the index can serve it.
      await client.query('SET enable_seqscan = off');
      const plan = await client.query<{ 'QUERY PLAN': string }>(`EXPLAIN ${query}`);
      const text = plan.rows.map((row) => row['QUERY PLAN']).join('\n');
      // Each partition's copy of it, named by the parent it belongs to (the inbox is partitioned).
      expect(await withParentIndexNames(client, text)).toMatch(/inbox_pending_idx/);
    } finally {
      await client.query('RESET enable_seqscan');
      client.release();
    }
  });

  it('runs as a login that is only a member of hookgate_readonly (worker.keda.databaseUrlSecret)', async () => {
    const client = await db.pool.connect();
    try {
      await applyRoles(client, true);
    } finally {
      client.release();
    }
    const name = `hgkeda_${randomBytes(4).toString('hex')}`;
    await db.pool.query(`CREATE ROLE ${name} LOGIN PASSWORD 'keda-test-only' IN ROLE hookgate_readonly`);
    const url = new URL(db.url);
    url.username = name;
    url.password = 'keda-test-only';
    const keda = new pg.Client({ connectionString: url.toString() });
    await keda.connect();
    try {
      const result = await keda.query<{ count: string }>(query);
      expect(Number(result.rows[0]?.count)).toBe(200);
      // And that login can change nothing.
      await expect(keda.query(`UPDATE hookgate.inbox SET status = 'processed'`)).rejects.toMatchObject({
        code: '42501',
      });
    } finally {
      await keda.end();
    }
  });
});
