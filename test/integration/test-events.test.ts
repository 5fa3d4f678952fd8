import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { renderStats } from '../../services/cli/commands/stats.ts';
import { TEST_EVENT_TYPE } from '../../services/core/handlers/test-event.ts';
import { collectStats } from '../../services/core/read-models/stats.ts';
import { createTestDatabase, type TestDatabase } from '../support/database.ts';
import {
  Claimer,
  startTestWorker,
  type TestWorker,
  waitFor,
  workerConfig,
} from '../support/worker-harness.ts';

// A test event (type hookgate.test, what `send-test` and `helm test` send) settles `ignored` on
// every handler without any business write, even when its payload is shaped like a real event;
// real events beside it in the same batches apply as usual. `stats` counts test events apart.
let db: TestDatabase;
let claimer: Claimer;
let worker: TestWorker;
let configDir: string;

const invoice = (id: string) => ({ data: { object: { id, object: 'invoice', status: 'open' } } });

beforeAll(async () => {
  db = await createTestDatabase();
  await db.pool.query(`
    CREATE SCHEMA app;
    CREATE TABLE app.applied (id serial PRIMARY KEY, event_id text, via text, UNIQUE (event_id, via))`);
  configDir = mkdtempSync(join(tmpdir(), 'hookgate-test-events-'));
  writeFileSync(
    join(configDir, 'app-handler.ts'),
    `export const handler = {
       name: 'app',
       async apply({ tx }, event) {
         await tx.query('INSERT INTO app.applied (event_id, via) VALUES ($1, $2)', [event.eventId, 'module']);
       },
     };`,
  );
  const endpoints = {
    rec: { handler: 'record' },
    proj: { handler: 'project' },
    // No stripeApiKey: subscription events end dead at once (option_missing).
    bill: { handler: 'billing' },
    // A destination (no relay runs here): only the real event gets a delivery row.
    dest: { handler: 'record', destinations: { down: { url: 'http://127.0.0.1:9/downstream' } } },
    sqlh: {
      handler: `sql:INSERT INTO app.applied (event_id, via) VALUES ($1::jsonb->>'event_id', 'sql')`,
    },
    mod: { handler: 'module:./app-handler.ts' },
  };
  const config = workerConfig(endpoints, { retryLimit: 3, retryDelay: '1s' });
  claimer = await Claimer.start(db.url, config);
  worker = await startTestWorker(db.url, config, { configDir });
});

afterAll(async () => {
  await worker?.stop();
  await claimer?.stop();
  await db?.drop();
});

const statuses = async () =>
  new Map(
    (
      await db.pool.query<{ key: string; status: string; attempts: number; last_error: string | null }>(
        `SELECT endpoint || '/' || event_id AS key, status, attempts, last_error FROM hookgate.inbox`,
      )
    ).rows.map((row) => [row.key, row]),
  );

describe('test events', () => {
  it('settle ignored on every handler with no business write; real events beside them apply', async () => {
    const entity = (n: number) => ({ entityType: 'thing', entityId: `t${n}`, version: 1 });
    for (const endpoint of ['rec', 'proj', 'dest', 'sqlh', 'mod']) {
      // Several test events in one claim, so they share batches with the real event.
      await claimer.claim(endpoint, [
        { eventId: 'test_1', eventType: TEST_EVENT_TYPE, ...entity(1) },
        { eventId: 'real_1', eventType: 'thing.updated', ...entity(2) },
        { eventId: 'test_2', eventType: TEST_EVENT_TYPE, ...entity(3) },
      ]);
    }
    await claimer.claim('bill', [
      {
        eventId: 'test_1',
        eventType: TEST_EVENT_TYPE,
        body: { type: TEST_EVENT_TYPE, ...invoice('in_test') },
      },
      {
        eventId: 'real_1',
        eventType: 'invoice.created',
        body: { type: 'invoice.created', ...invoice('in_real') },
      },
      {
        eventId: 'test_2',
        eventType: TEST_EVENT_TYPE,
        body: { type: TEST_EVENT_TYPE, ...invoice('in_test2') },
      },
    ]);
    await waitFor('every event settled', async () => {
      const rows = [...(await statuses()).values()];
      return rows.length === 18 && rows.every((row) => row.status !== 'pending');
    });
    const rows = await statuses();
    for (const endpoint of ['rec', 'proj', 'bill', 'dest', 'sqlh', 'mod']) {
      expect(rows.get(`${endpoint}/test_1`)?.status, endpoint).toBe('ignored');
      expect(rows.get(`${endpoint}/test_2`)?.status, endpoint).toBe('ignored');
      expect(rows.get(`${endpoint}/real_1`)?.status, endpoint).toBe('processed');
    }
    const invoices = await db.pool.query('SELECT id FROM billing.invoices ORDER BY id');
    expect(invoices.rows.map((row) => row.id)).toEqual(['in_real']);
    const projected = await db.pool.query(
      `SELECT event_id FROM hookgate.entity_state WHERE endpoint = 'proj'`,
    );
    expect(projected.rows.map((row) => row.event_id)).toEqual(['real_1']);
    const applied = await db.pool.query('SELECT event_id, via FROM app.applied ORDER BY via');
    expect(applied.rows).toEqual([
      { event_id: 'real_1', via: 'module' },
      { event_id: 'real_1', via: 'sql' },
    ]);
    const delivered = await db.pool.query<{ key: string }>(
      `SELECT endpoint || ':' || destination || ':' || event_id AS key FROM hookgate.destination_deliveries`,
    );
    expect(delivered.rows.map((row) => row.key)).toEqual(['dest:down:real_1']);

    // stats: the test events in a column of their own, not among the ignored ones.
    const report = await collectStats(db.pool, new Date(Date.now() - 3_600_000), null, []);
    for (const stats of report.endpoints) {
      expect(stats, stats.endpoint).toMatchObject({ processed: 1, ignored: 0, stale: 0, test: 2 });
    }
    expect(renderStats(report, '--since 1h')).toMatch(
      /PROCESSED\s+IGNORED\s+STALE\s+DISCARDED\s+TEST\s+ACCEPTED/,
    );
  }, 90_000);

  it('without billing.stripeApiKey, a subscription event ends dead at its first attempt (option_missing); invoices still apply', async () => {
    await claimer.claim('bill', [
      {
        eventId: 'sub_1',
        eventType: 'customer.subscription.updated',
        body: {
          type: 'customer.subscription.updated',
          data: { object: { id: 'sub_x', object: 'subscription' } },
        },
      },
      {
        eventId: 'inv_2',
        eventType: 'invoice.created',
        body: { type: 'invoice.created', ...invoice('in_2') },
      },
    ]);
    await waitFor('both settled', async () => {
      const rows = await statuses();
      return rows.get('bill/sub_1')?.status === 'dead' && rows.get('bill/inv_2')?.status === 'processed';
    });
    const dead = (await statuses()).get('bill/sub_1')!;
    // Not retried: retryLimit 3 would have taken four attempts and several seconds.
    expect(dead.attempts).toBe(1);
    expect(dead.last_error).toMatch(
      /^option_missing: bill\.options\.stripeApiKey is not set, so customer\.subscription\.updated cannot re-fetch its subscription; set it, restart, and requeue \(hookgate requeue --endpoint bill --status dead --type customer\.subscription\.updated\)/,
    );
  }, 60_000);
});
