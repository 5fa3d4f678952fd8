import pg from 'pg';
import type { PgBoss } from 'pg-boss';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { HookgateError } from '../../services/core/errors.ts';
import { createBillingHandler } from '../../services/core/handlers/billing.ts';
import type { Handler } from '../../services/core/handlers/types.ts';
import { outboxQueue } from '../../services/core/queue/names.ts';
import { ensureOutboxQueues } from '../../services/core/queue/queues.ts';
import { applyJobs } from '../../services/worker/apply.ts';
import {
  applyEvent,
  claimEvents,
  fetchWaiting,
  ONE_ATTEMPT,
  silentLogger,
  startBoss,
  stripeEvent,
} from '../support/apply.ts';
import { createTestDatabase, type TestDatabase } from '../support/database.ts';

const deps = { endpoint: 'stripe', logger: silentLogger, configDir: process.cwd() };

let db: TestDatabase;
let boss: PgBoss;
let wide: pg.Pool;
let billing: Handler;
let counter = 0;

/** A fresh invoice id per test, so tests share one database without seeing each other. */
const newInvoice = () => `in_${Date.now().toString(36)}_${++counter}`;

function invoice(id: string, fields: Record<string, unknown> = {}) {
  return {
    id,
    object: 'invoice',
    customer: 'cus_1',
    currency: 'eur',
    amount_due: 1200,
    amount_paid: 0,
    ...fields,
  };
}

const paid = (id: string, eventId?: string) =>
  stripeEvent('invoice.paid', invoice(id, { status: 'paid', amount_paid: 1200 }), { eventId });
const created = (id: string) => stripeEvent('invoice.created', invoice(id, { status: 'draft' }));
const voided = (id: string) => stripeEvent('invoice.voided', invoice(id, { status: 'void' }));

async function ledgerRows(id: string): Promise<{ amount: string; event_id: string }[]> {
  return (
    await db.pool.query('SELECT amount, event_id FROM billing.ledger_entries WHERE invoice_id = $1', [id])
  ).rows;
}

async function status(id: string): Promise<string | undefined> {
  return (await db.pool.query('SELECT status FROM billing.invoices WHERE id = $1', [id])).rows[0]?.status;
}

/** Notification jobs queued (committed) for an invoice, whatever their state. */
async function notifications(id: string): Promise<number> {
  const { rows } = await db.pool.query(
    `SELECT count(*)::int AS n FROM pgboss.job WHERE name = $1 AND data->>'key' = $2`,
    [outboxQueue('notify'), `${id}:paid`],
  );
  return rows[0].n;
}

const apply = (event: ReturnType<typeof stripeEvent>, handler: Handler = billing, pool: pg.Pool = db.pool) =>
  applyEvent(pool, boss, handler, event);

beforeAll(async () => {
  db = await createTestDatabase();
  boss = await startBoss(db.url);
  await ensureOutboxQueues(boss);
  wide = new pg.Pool({ connectionString: db.url, max: 10 });
  billing = createBillingHandler({ notifyUrl: 'http://127.0.0.1:9/notify' }, deps);
});

afterAll(async () => {
  await wide?.end();
  await boss?.stop({ graceful: false, close: true });
  await db?.drop();
});

describe('billing: invoices', () => {
  let id: string;
  beforeEach(() => {
    id = newInvoice();
  });

  it('invoice.created inserts only if absent', async () => {
    expect(await apply(created(id))).toBe('processed');
    expect(await apply(created(id))).toBe('ignored');
    expect(await status(id)).toBe('draft');
  });

  it('the same invoice.paid event twice books one ledger row and queues one notification', async () => {
    await apply(created(id));
    const event = paid(id);
    expect(await apply(event)).toBe('processed');
    expect(await apply(event)).toBe('ignored');
    expect(await status(id)).toBe('paid');
    expect(await ledgerRows(id)).toEqual([{ amount: '1200', event_id: event.eventId }]);
    expect(await notifications(id)).toBe(1);
  });

  /**
   * The same payment under 8 event ids, each claimed alone (its own job), applied at once on 8
   * connections through the worker's path, each in its own transaction.
   */
  async function eightAtOnce(
    handler: Handler,
    events = Array.from({ length: 8 }, (_, n) => paid(id, `evt_${n}_${id}`)),
  ): Promise<string[]> {
    for (const event of events) await claimEvents(db.pool, boss, [event]);
    const jobs = await fetchWaiting(boss, 'stripe');
    expect(jobs).toHaveLength(8);
    const clients = await Promise.all(Array.from({ length: 8 }, () => wide.connect()));
    // Warm the pool so that the 8 applies start at once, each on its own connection.
    for (const c of clients) c.release();
    const results = await Promise.all(
      jobs.map((job) =>
        applyJobs({ pool: wide, boss, logger: silentLogger }, 'stripe', handler, [job], ONE_ATTEMPT),
      ),
    );
    return results.flat().map((result) => result.outcome);
  }

  it('the same payment under 8 event ids applied from 8 connections at once books one ledger row', async () => {
    const outcomes = await eightAtOnce(billing);
    expect(outcomes.filter((o) => o === 'processed')).toHaveLength(1);
    expect(outcomes.filter((o) => o === 'ignored')).toHaveLength(7);
    expect(await ledgerRows(id)).toHaveLength(1);
    expect(await notifications(id)).toBe(1);
    expect(await status(id)).toBe('paid');
  });

  it('8 concurrent transactions holding their writes open until all have applied → one ledger row', async () => {
    await apply(created(id));
    // Each transaction begins and locks its inbox row, then all start writing together; the row
    // lock on the invoice makes the other seven wait for the first commit, then re-check and find
    // it paid.
    let arrived = 0;
    let release!: () => void;
    const barrier = new Promise<void>((resolve) => {
      release = resolve;
    });
    const held: Handler = {
      name: 'billing',
      async applyBatch(context, events) {
        await context.tx.query('SELECT 1');
        arrived += 1;
        if (arrived === 8) release();
        await barrier;
        return billing.applyBatch!(context, events);
      },
    };
    const outcomes = await eightAtOnce(held);
    expect(outcomes.sort()).toEqual([
      'ignored',
      'ignored',
      'ignored',
      'ignored',
      'ignored',
      'ignored',
      'ignored',
      'processed',
    ]);
    expect(await ledgerRows(id)).toHaveLength(1);
    expect(await notifications(id)).toBe(1);
  });

  it('invoice.paid before invoice.created → the invoice ends paid, booked once', async () => {
    expect(await apply(paid(id))).toBe('processed');
    expect(await apply(created(id))).toBe('ignored');
    expect(await status(id)).toBe('paid');
    expect(await ledgerRows(id)).toHaveLength(1);
    expect(await notifications(id)).toBe(1);
  });

  it('the same payment under two event ids → one ledger row, one notification', async () => {
    await apply(created(id));
    const first = paid(id, `evt_a_${id}`);
    const second = paid(id, `evt_b_${id}`);
    expect(await apply(first)).toBe('processed');
    expect(await apply(second)).toBe('ignored');
    expect(await ledgerRows(id)).toEqual([{ amount: '1200', event_id: first.eventId }]);
    expect(await notifications(id)).toBe(1);
  });

  it('invoice.paid on a voided invoice → ignored, nothing booked, nothing notified', async () => {
    await apply(created(id));
    expect(await apply(voided(id))).toBe('processed');
    expect(await apply(paid(id))).toBe('ignored');
    expect(await status(id)).toBe('void');
    expect(await ledgerRows(id)).toHaveLength(0);
    expect(await notifications(id)).toBe(0);
  });

  it('invoice.voided before created creates it void; a paid invoice is never voided', async () => {
    expect(await apply(voided(id))).toBe('processed');
    expect(await apply(created(id))).toBe('ignored');
    expect(await status(id)).toBe('void');

    const other = newInvoice();
    await apply(paid(other));
    expect(await apply(voided(other))).toBe('ignored');
    expect(await status(other)).toBe('paid');
    expect(await ledgerRows(other)).toHaveLength(1);
  });

  it('voided and paid racing on 8 connections → either paid and booked once, or void and unbooked', async () => {
    await apply(created(id));
    const events = Array.from({ length: 8 }, (_, i) => (i % 2 === 0 ? paid(id) : voided(id)));
    await eightAtOnce(billing, events);
    const final = await status(id);
    const booked = await ledgerRows(id);
    if (final === 'paid') {
      expect(booked).toHaveLength(1);
      expect(await notifications(id)).toBe(1);
    } else {
      expect(final).toBe('void');
      expect(booked).toHaveLength(0);
      expect(await notifications(id)).toBe(0);
    }
  });

  it('a paid invoice whose creation already said paid still books its payment once', async () => {
    await apply(stripeEvent('invoice.created', invoice(id, { status: 'paid', amount_paid: 900 })));
    expect(await ledgerRows(id)).toHaveLength(0);
    expect(await apply(paid(id))).toBe('processed');
    expect(await apply(paid(id))).toBe('ignored');
    expect(await ledgerRows(id)).toHaveLength(1);
  });

  it('the notification carries what the relay needs', async () => {
    const event = paid(id);
    await apply(event);
    const { rows } = await db.pool.query(
      `SELECT data FROM pgboss.job WHERE name = $1 AND data->>'key' = $2`,
      [outboxQueue('notify'), `${id}:paid`],
    );
    expect(rows[0].data.payload).toMatchObject({
      url: 'http://127.0.0.1:9/notify',
      idempotencyKey: `${id}:paid`,
      endpoint: 'stripe',
      eventId: event.eventId,
      body: { type: 'invoice.paid', invoice: id, amount: 1200, currency: 'eur', customer: 'cus_1' },
    });
  });

  it('other invoice events are ignored; a payload without an invoice id fails with a clear error', async () => {
    expect(await apply(stripeEvent('invoice.finalized', invoice(id)))).toBe('ignored');
    const template = stripeEvent('invoice.paid', invoice(id));
    const broken = {
      ...template,
      payload: { id: template.eventId, type: 'invoice.paid', data: { object: { object: 'invoice' } } },
    };
    await expect(apply(broken)).rejects.toThrow(/invoice\.paid event .* has no usable \/data\/object\/id/);
    expect(await status(id)).toBeUndefined();
  });
});

describe('billing: options', () => {
  it('rejects bad options naming the option', () => {
    const attempt = (options: unknown) => () => createBillingHandler(options, deps);
    expect(attempt({ stripeApiBase: 'ftp://x' })).toThrow(
      /^stripe\.options\.stripeApiBase: must be an http\(s\) URL$/,
    );
    expect(attempt({ stripeApiBase: 'https://api.stripe.com/v1' })).toThrow(
      /stripe\.options\.stripeApiBase: must not have a path/,
    );
    expect(attempt({ notifyUrl: 'not a url' })).toThrow(
      /stripe\.options\.notifyUrl: must be an http\(s\) URL/,
    );
    expect(attempt({ stripeTimeout: 'soon' })).toThrow(
      /stripe\.options\.stripeTimeout: "soon" is not a duration/,
    );
    expect(attempt({ notifyURL: 'http://x' })).toThrow(/stripe\.options\.notifyURL: unknown option/);
    try {
      createBillingHandler({ stripeApiKey: '' }, deps);
      expect.unreachable();
    } catch (error) {
      expect(error).toBeInstanceOf(HookgateError);
      expect((error as HookgateError).code).toBe('handler_options_invalid');
    }
  });
});
