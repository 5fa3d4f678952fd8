import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createPool } from '../../services/core/db/pool.ts';
import { createHandler } from '../../services/core/handlers/index.ts';
import type { Handler } from '../../services/core/handlers/types.ts';
import { createLogger } from '../../services/core/logging.ts';
import { applyQueue, eventIdsOf, outboxQueue } from '../../services/core/queue/names.ts';
import { applyJobs, type FetchedJob } from '../../services/worker/apply.ts';
import { createTestDatabase, type TestDatabase } from '../support/database.ts';
import { Claimer, workerConfig } from '../support/worker-harness.ts';

// The billing handler through the real batch apply: its notify effects are collected and
// inserted once, in the apply transaction, only for the events that applied.
const config = workerConfig({
  // Nothing listens there: the notifications are only queued here, never sent.
  bill: { handler: 'billing', options: { notifyUrl: 'http://127.0.0.1:9/paid' } },
  mod: { handler: 'record' },
  half: { handler: 'record' },
});
const logger = createLogger('silent');
/** The worker's policy for these tests: a failed event is sent again (not ended) at once. */
const POLICY = { maxAttempts: 8, retryDelaySeconds: 0, retryDelayMaxSeconds: 0 };

/** Every job waiting in the endpoint's queue, as one worker fetch. */
async function fetchAll(endpoint: string): Promise<FetchedJob[]> {
  return (await claimer.boss.fetch(applyQueue(endpoint), { batchSize: 100 })).map((job) => ({
    id: job.id,
    retryCount: job.retryCount,
    eventIds: eventIdsOf(job.data),
  }));
}

let db: TestDatabase;
let claimer: Claimer;

beforeAll(async () => {
  db = await createTestDatabase();
  claimer = await Claimer.start(db.url, config);
});

afterAll(async () => {
  await claimer?.stop();
  await db?.drop();
});

const paid = (eventId: string, invoice: string) => ({
  eventId,
  eventType: 'invoice.paid',
  body: {
    id: eventId,
    type: 'invoice.paid',
    data: { object: { id: invoice, status: 'paid', currency: 'eur', amount_paid: 4200 } },
  },
});

async function notifyJobs(): Promise<string[]> {
  const result = await db.pool.query<{ key: string }>(
    `SELECT data->>'key' AS key FROM pgboss.job WHERE name = $1 ORDER BY 1`,
    [outboxQueue('notify')],
  );
  return result.rows.map((row) => row.key);
}

describe('outbox effects in a batch', () => {
  it('queues one notification per paid invoice, none for a failed event, even when the batch is redone', async () => {
    await claimer.claim('bill', [
      paid('evt_a', 'in_a'),
      paid('evt_b', 'in_b'),
      // The same payment under a second event id: absorbed, no second notification.
      paid('evt_a_again', 'in_a'),
      // Not an invoice: the billing handler refuses it, which forces the event-by-event rerun.
      {
        eventId: 'evt_bad',
        eventType: 'invoice.paid',
        body: { id: 'evt_bad', type: 'invoice.paid', data: {} },
      },
    ]);
    const jobs = await fetchAll('bill');
    // One claim: one job carrying its 4 events.
    expect(jobs.flatMap((job) => job.eventIds)).toHaveLength(4);
    const handler = await createHandler('billing', config.endpoints.bill!.options, {
      endpoint: 'bill',
      logger,
      configDir: '.',
    });
    const pool = createPool({
      connectionString: db.url,
      max: 1,
      statementTimeoutMs: 30_000,
      connectTimeoutMs: 10_000,
      applicationName: 'test-outbox',
    });
    try {
      const result = await applyJobs({ pool, boss: claimer.boss, logger }, 'bill', handler, jobs, POLICY);
      const outcomes = Object.fromEntries(result.map((e) => [e.eventId, e.outcome]));
      expect(outcomes).toEqual({
        evt_a: 'processed',
        evt_b: 'processed',
        evt_a_again: 'ignored',
        // An unusable payload: dead at once (EventUnusable), its effects dropped with its rerun.
        evt_bad: 'dead',
      });
    } finally {
      await pool.end();
    }
    expect(await notifyJobs()).toEqual(['in_a:paid', 'in_b:paid']);
    const ledger = await db.pool.query('SELECT count(*)::int AS n FROM billing.ledger_entries');
    expect(ledger.rows[0].n).toBe(2);
  });
  it('an effect of a kind no relay consumes fails its own event only, not the batch', async () => {
    await claimer.claim('mod', [
      { eventId: 'm_good_1', eventType: 't', body: { id: 'm_good_1' } },
      { eventId: 'm_bad', eventType: 't', body: { id: 'm_bad' } },
      { eventId: 'm_good_2', eventType: 't', body: { id: 'm_good_2' } },
    ]);
    const jobs = await fetchAll('mod');
    expect(jobs.flatMap((job) => job.eventIds)).toHaveLength(3);
    // A module handler's mistake: m_bad asks for an `email` effect, which has no queue.
    const handler: Handler = {
      name: 'test-outbox-kinds',
      async apply(context, event) {
        const kind = event.eventId === 'm_bad' ? 'email' : 'notify';
        await context.outbox.enqueue({ kind, key: `mod:${event.eventId}`, payload: {} });
        return undefined;
      },
    };
    const pool = createPool({
      connectionString: db.url,
      max: 1,
      statementTimeoutMs: 30_000,
      connectTimeoutMs: 10_000,
      applicationName: 'test-outbox-kinds',
    });
    try {
      const result = await applyJobs({ pool, boss: claimer.boss, logger }, 'mod', handler, jobs, POLICY);
      const outcomes = Object.fromEntries(result.map((e) => [e.eventId, e.outcome]));
      expect(outcomes.m_good_1).toBe('processed');
      expect(outcomes.m_good_2).toBe('processed');
      expect(outcomes.m_bad).not.toBe('processed');
    } finally {
      await pool.end();
    }
    const bad = await db.pool.query(`SELECT status, last_error FROM hookgate.inbox WHERE event_id = 'm_bad'`);
    expect(bad.rows[0].status).toBe('pending');
    expect(bad.rows[0].last_error).toContain('outbox_kind_unknown');
    expect(await notifyJobs()).toEqual(expect.arrayContaining(['mod:m_good_1', 'mod:m_good_2']));
  });
  it('a set-based form that writes and then throws leaves nothing: the per-event rerun writes once', async () => {
    await db.pool.query('CREATE TABLE public.test_writes (event_id text NOT NULL)');
    await claimer.claim('half', [
      { eventId: 'h1', eventType: 't', body: { id: 'h1' } },
      { eventId: 'h2', eventType: 't', body: { id: 'h2' } },
      { eventId: 'h3', eventType: 't', body: { id: 'h3' } },
    ]);
    const jobs = await fetchAll('half');
    expect(jobs.flatMap((job) => job.eventIds)).toHaveLength(3);
    let batchCalls = 0;
    const handler: Handler = {
      name: 'test-half-batch',
      // Writes and queues effects for every event, then fails when given more than one: the
      // engine rolls the batch back and applies each event again as a batch of one.
      async applyBatch(context, events) {
        batchCalls++;
        await context.tx.query('INSERT INTO public.test_writes SELECT unnest($1::text[])', [
          events.map((e) => e.eventId),
        ]);
        for (const event of events) {
          await context.outbox(event).enqueue({
            kind: 'notify',
            key: `half${events.length > 1 ? '-batch' : ''}:${event.eventId}`,
            payload: {},
          });
        }
        if (events.length > 1) throw new Error('the set-based form fails after writing');
        return events.map(() => undefined);
      },
    };
    const pool = createPool({
      connectionString: db.url,
      max: 1,
      statementTimeoutMs: 30_000,
      connectTimeoutMs: 10_000,
      applicationName: 'test-half-batch',
    });
    try {
      const result = await applyJobs({ pool, boss: claimer.boss, logger }, 'half', handler, jobs, POLICY);
      expect(result.map((e) => e.outcome)).toEqual(['processed', 'processed', 'processed']);
    } finally {
      await pool.end();
    }
    expect(batchCalls).toBe(4);
    const writes = await db.pool.query('SELECT event_id FROM public.test_writes ORDER BY 1');
    expect(writes.rows.map((r) => r.event_id)).toEqual(['h1', 'h2', 'h3']);
    const keys = await notifyJobs();
    expect(keys.filter((k) => k.startsWith('half'))).toEqual(['half:h1', 'half:h2', 'half:h3']);
  });
});
