// The quarantine and audit pages' statements (listHeldPage, countHeld, listActions), on
// PostgreSQL 18 and 15: planned for their real values over tables whose settled history is large,
// they read the indexes (one of the held rows' partial indexes, quarantine_held_idx or
// quarantine_held_reason_idx; audit_at_idx / audit_endpoint_at_idx), never a
// sequential scan of the table.
import type pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { listActions } from '../../services/core/audit/audit.ts';
import type { Queryable } from '../../services/core/db/pool.ts';
import { countHeld, listHeldPage } from '../../services/core/quarantine/actions.ts';
import { createTestDatabase, type TestDatabase } from '../support/database.ts';

let db: TestDatabase;

/** Runs the function's statement as EXPLAIN with its values, and hands back the plan's text. */
async function planOf(call: (db: Queryable) => Promise<unknown>): Promise<string> {
  let plan = '';
  const explainer = {
    async query(text: string, values?: unknown[]) {
      const result = await db.pool.query(`EXPLAIN ${text}`, values);
      plan = result.rows.map((row: Record<string, string>) => row['QUERY PLAN']).join('\n');
      return { rows: [] } as unknown as pg.QueryResult;
    },
  } as unknown as Queryable;
  await call(explainer);
  return plan;
}

beforeAll(async () => {
  db = await createTestDatabase();
  // 100 000 settled quarantine rows and 30 held; 200 000 audit rows over 30 days.
  await db.pool.query(`
    INSERT INTO hookgate.quarantine (endpoint, received_at, reason, message, body, body_digest, released_at, settled_by)
    SELECT 'ep' || (n % 4), now() - make_interval(secs => n), 'event_type_missing', 'x', '\\x7b7d',
           sha256(int8send(n)), CASE WHEN n > 30 THEN now() END, CASE WHEN n > 30 THEN 'ops' END
      FROM generate_series(1, 100000) AS n`);
  await db.pool.query(`
    INSERT INTO hookgate.audit (at, actor, command, endpoint, filters, count, dry_run)
    SELECT now() - make_interval(secs => n * 13), 'cli:' || (n % 7), 'requeue', 'ep' || (n % 4), '{}', 1, n % 2 = 0
      FROM generate_series(1, 200000) AS n`);
  await db.pool.query('ANALYZE hookgate.quarantine');
  await db.pool.query('ANALYZE hookgate.audit');
}, 120_000);

afterAll(async () => {
  await db?.drop();
});

describe('the quarantine and audit pages read through indexes', () => {
  it.each([
    ['held, any endpoint', { limit: 50 }],
    ['held, one endpoint and reason', { endpoint: 'ep1', reason: 'event_type_missing', limit: 50 }],
    [
      'held, the next page',
      { endpoint: 'ep1', before: { receivedAt: new Date().toISOString(), id: '99999' }, limit: 50 },
    ],
  ])('quarantine list: %s', async (_name, query) => {
    const plan = await planOf((explainer) => listHeldPage(explainer, query));
    expect(plan).toMatch(/quarantine_held(_reason)?_idx/);
    expect(plan).not.toMatch(/Seq Scan on quarantine/);
  });

  it('the overview count', async () => {
    const plan = await planOf((explainer) => countHeld(explainer));
    expect(plan).toMatch(/quarantine_held(_reason)?_idx/);
    expect(plan).not.toMatch(/Seq Scan on quarantine/);
  });

  it.each([
    ['newest', { limit: 50 }, 'audit_at_idx'],
    [
      'since, by actor',
      { since: new Date(Date.now() - 3_600_000), actor: 'cli:3', limit: 50 },
      'audit_at_idx',
    ],
    // The statement's `$2 IS NULL OR endpoint = $2` lets the planner walk audit_at_idx newest first
    // and filter (one endpoint in four here): an index either way, never the whole table.
    ['one endpoint', { endpoint: 'ep2', limit: 50 }, 'audit_'],
    [
      'the next page',
      { before: { at: new Date(Date.now() - 86_400_000).toISOString(), id: '5000' }, limit: 50 },
      'audit_at_idx',
    ],
  ])('audit list: %s', async (_name, query, index) => {
    const plan = await planOf((explainer) => listActions(explainer, query));
    expect(plan).toContain(index);
    expect(plan).toMatch(/Index Scan( Backward)? using audit_(endpoint_)?at_idx/);
    expect(plan).not.toMatch(/Seq Scan on audit/);
  });
});
