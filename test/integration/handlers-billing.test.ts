import pg from 'pg';
import type { PgBoss } from 'pg-boss';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { routesFrom, webhookIdFor } from '../../services/core/destinations/routes.ts';
import { HookgateError } from '../../services/core/errors.ts';
import { createBillingHandler } from '../../services/core/handlers/billing.ts';
import type { Handler } from '../../services/core/handlers/types.ts';
import { applyJobs } from '../../services/worker/apply.ts';
import {
  ApplyFailed,
  claimEvents,
  fetchWaiting,
  ONE_ATTEMPT,
  silentLogger,
  startBoss,
  stripeEvent,
} from '../support/apply.ts';
import { createTestDatabase, type TestDatabase } from '../support/database.ts';
import { workerConfig } from '../support/worker-harness.ts';

const deps = { endpoint: 'stripe', logger: silentLogger, configDir: process.cwd() };
/** billing's `notify` names a destination routed by the handler (no relay runs: rows are counted). */
const destinations = routesFrom(
  workerConfig({
    stripe: {
      handler: 'billing',
      options: { notify: 'ledger' },
      destinations: { ledger: { url: 'http://127.0.0.1:9/ledger', routedBy: 'handler' } },
    },
  }),
);

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

/** Deliveries to the `notify` destination (committed) of an invoice's events, whatever their state. */
async function notifications(id: string): Promise<number> {
  const { rows } = await db.pool.query(
    `SELECT count(*)::int AS n
       FROM hookgate.destination_deliveries d
       JOIN hookgate.inbox i ON i.endpoint = d.endpoint AND i.event_id = d.event_id
      WHERE d.destination = 'ledger' AND i.payload #>> '{data,object,id}' = $1`,
    [id],
  );
  return rows[0].n;
}

/** The worker's path, with the endpoint's destinations: claimed, fetched, applied in one transaction. */
async function apply(
  event: ReturnType<typeof stripeEvent>,
  handler: Handler = billing,
  pool: pg.Pool = db.pool,
): Promise<string> {
  await claimEvents(pool, boss, [event]);
  const jobs = await fetchWaiting(boss, event.endpoint);
  const results = await applyJobs(
    { pool, boss, logger: silentLogger, destinations },
    event.endpoint,
    handler,
    jobs,
    ONE_ATTEMPT,
  );
  const result = results.find((candidate) => candidate.eventId === event.eventId);
  if (!result) throw new Error(`no job carried ${event.eventId}`);
  if (['retry', 'dead', 'parked'].includes(result.outcome)) throw new ApplyFailed(result);
  return result.outcome;
}

beforeAll(async () => {
  db = await createTestDatabase();
  boss = await startBoss(db.url);
  wide = new pg.Pool({ connectionString: db.url, max: 10 });
  billing = createBillingHandler({ notify: 'ledger' }, deps);
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

  it('the same invoice.paid event twice books one ledger row and routes one notification', async () => {
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
        applyJobs(
          { pool: wide, boss, logger: silentLogger, destinations },
          'stripe',
          handler,
          [job],
          ONE_ATTEMPT,
        ),
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

  it('the notification is a delivery naming the endpoint, the destination and the event, nothing else', async () => {
    const event = paid(id);
    await apply(event);
    const { rows } = await db.pool.query(
      `SELECT endpoint, destination, event_id, event_type, webhook_id, status
         FROM hookgate.destination_deliveries WHERE event_id = $1`,
      [event.eventId],
    );
    expect(rows).toEqual([
      {
        endpoint: 'stripe',
        destination: 'ledger',
        event_id: event.eventId,
        event_type: 'invoice.paid',
        webhook_id: webhookIdFor('stripe', event.eventId, 'ledger'),
        status: 'pending',
      },
    ]);
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
    expect(attempt({ notify: 'http://x.example/hook' })).toThrow(
      /stripe\.options\.notify: must name one of the endpoint's destinations/,
    );
    expect(attempt({ stripeTimeout: 'soon' })).toThrow(
      /stripe\.options\.stripeTimeout: "soon" is not a duration/,
    );
    expect(attempt({ notifyUrl: 'http://x' })).toThrow(/stripe\.options\.notifyUrl: unknown option/);
    try {
      createBillingHandler({ stripeApiKey: '' }, deps);
      expect.unreachable();
    } catch (error) {
      expect(error).toBeInstanceOf(HookgateError);
      expect((error as HookgateError).code).toBe('handler_options_invalid');
    }
  });
});
