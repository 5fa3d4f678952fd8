import type pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createBillingHandler } from '../../services/core/handlers/billing.ts';
import { INVOICE_LOCK_CLASS } from '../../services/core/handlers/billing-sql.ts';
import type { Handler } from '../../services/core/handlers/types.ts';
import { applyQueue, eventIdsOf } from '../../services/core/queue/names.ts';
import { applyJobs, type FetchedJob } from '../../services/worker/apply.ts';
import { silentLogger } from '../support/apply.ts';
import { createTestDatabase, createTestPool, type TestDatabase } from '../support/database.ts';
import { Claimer, workerConfig } from '../support/worker-harness.ts';

// A set-based batch that fails is rolled back to its savepoint and applied again event by
// event, in the same transaction. A rollback to a savepoint releases the locks taken after it,
// so the batch's invoice locks (which keep concurrent batches from deadlocking: see
// batch-lock-order.test.ts) are taken before that savepoint, and must still be held while the
// events are applied one by one.

const config = workerConfig({ billing: { handler: 'billing' } });
let db: TestDatabase;
let claimer: Claimer;
let pool: pg.Pool;

beforeAll(async () => {
  db = await createTestDatabase();
  claimer = await Claimer.start(db.url, config);
  pool = createTestPool(db.url, 'test-lock-fallback');
}, 60_000);

afterAll(async () => {
  await pool?.end();
  await claimer?.stop();
  await db?.drop();
});

const invoiceEvent = (eventId: string, invoiceId: string) => ({
  eventId,
  eventType: 'invoice.created',
  body: {
    id: eventId,
    object: 'event',
    type: 'invoice.created',
    created: 1_700_000_000,
    data: {
      object: {
        id: invoiceId,
        object: 'invoice',
        customer: 'cus_1',
        currency: 'eur',
        amount_due: 100,
        status: 'draft',
      },
    },
  },
});

/** Advisory locks of the invoice class held in this database (by sessions other than `observer`'s). */
async function invoiceLocksHeld(observer: pg.Pool): Promise<number> {
  const { rows } = await observer.query<{ n: number }>(
    `SELECT count(*)::int AS n FROM pg_locks
      WHERE locktype = 'advisory' AND classid = $1::int::oid AND granted
        -- pg_locks spans the server: other tests' databases take the same lock class.
        AND database = (SELECT oid FROM pg_database WHERE datname = current_database())`,
    [INVOICE_LOCK_CLASS],
  );
  return rows[0]!.n;
}

describe('the event-by-event fallback of a failed set-based batch', () => {
  it('still holds the batch’s invoice locks', async () => {
    await claimer.claim('billing', [
      invoiceEvent('evt_fb_1', 'in_fb_1'),
      invoiceEvent('evt_fb_2', 'in_fb_2'),
    ]);
    const billing = createBillingHandler({}, { endpoint: 'billing', logger: silentLogger, configDir: '.' });
    const held: number[] = [];
    // The batch of two fails after its writes; each event's rerun (a batch of one) records the
    // locks held then.
    const failing: Handler = {
      name: 'billing',
      lockBatch: billing.lockBatch!.bind(billing),
      async applyBatch(context, events) {
        if (events.length > 1) {
          await billing.applyBatch!(context, events);
          throw new Error('the set-based pass fails');
        }
        held.push(await invoiceLocksHeld(db.pool));
        return billing.applyBatch!(context, events);
      },
    };
    const fetched = await claimer.boss.fetch(applyQueue('billing'), { batchSize: 10 });
    const jobs: FetchedJob[] = fetched.map((job) => ({
      id: job.id,
      retryCount: job.retryCount,
      eventIds: eventIdsOf(job.data),
    }));
    expect(jobs.flatMap((job) => job.eventIds)).toHaveLength(2);
    const result = await applyJobs(
      { pool, boss: claimer.boss, logger: silentLogger },
      'billing',
      failing,
      jobs,
      {
        maxAttempts: 8,
        retryDelaySeconds: 0,
        retryDelayMaxSeconds: 0,
      },
    );
    expect(result.map((event) => event.outcome).sort()).toEqual(['processed', 'processed']);
    expect(held).toEqual([2, 2]);
    const { rows } = await db.pool.query(
      `SELECT id FROM billing.invoices WHERE id LIKE 'in_fb_%' ORDER BY id`,
    );
    expect(rows).toEqual([{ id: 'in_fb_1' }, { id: 'in_fb_2' }]);
  }, 30_000);
});
