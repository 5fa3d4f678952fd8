import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createBillingHandler } from '../../services/core/handlers/billing.ts';
import { createProjectHandler } from '../../services/core/handlers/project.ts';
import type { Handler, InboxEvent } from '../../services/core/handlers/types.ts';
import { silentLogger, stripeEvent } from '../support/apply.ts';
import { createTestDatabase, type TestDatabase } from '../support/database.ts';

// Two workers applying set-based batches that share keys (invoices, entities), in different
// orders, must not deadlock:
// PostgreSQL only detects a deadlock after deadlock_timeout (1 s by default), so each one
// held both batches for a second and then failed one of them (measured: the ~1 s tail of the
// end-to-end benchmark). Here each batch pauses after its first write until the other has made
// its own (or 300 ms have passed): without a lock order covering keys that do not exist yet,
// batch A holds key X and wants Y while batch B holds Y and wants X.

let db: TestDatabase;
let billing: Handler;
let project: Handler;

beforeAll(async () => {
  db = await createTestDatabase();
  const deps = { endpoint: 'stripe', logger: silentLogger, configDir: process.cwd() };
  billing = createBillingHandler({}, deps);
  project = createProjectHandler({ createOn: ['customer.created'] }, deps);
});

afterAll(async () => {
  await db?.drop();
});

const invoice = (id: string, status: string) => ({
  id,
  object: 'invoice',
  customer: 'cus_1',
  currency: 'eur',
  amount_due: 1200,
  amount_paid: status === 'paid' ? 1200 : 0,
  status,
});
const created = (id: string) => stripeEvent('invoice.created', invoice(id, 'draft'));
const paid = (id: string) => stripeEvent('invoice.paid', invoice(id, 'paid'));

/** Resolves when both sides have arrived, or after `ms` (a side held back by a lock never arrives). */
function meeting(ms: number): () => Promise<void> {
  let arrived = 0;
  let release: () => void = () => {};
  const both = new Promise<void>((resolve) => {
    release = resolve;
  });
  return async () => {
    arrived += 1;
    if (arrived === 2) release();
    await Promise.race([both, new Promise((resolve) => setTimeout(resolve, ms))]);
  };
}

/** Applies a batch in its own transaction; after its first write it waits at `meet`. */
async function applyBatch(
  handler: Handler,
  events: readonly InboxEvent[],
  meet: () => Promise<void>,
): Promise<unknown> {
  const client = new pg.Client({ connectionString: db.url });
  await client.connect();
  try {
    await client.query(`SET deadlock_timeout = '200ms'`);
    await client.query('BEGIN');
    let writes = 0;
    const query = client.query.bind(client) as (...args: unknown[]) => Promise<unknown>;
    const tx = new Proxy(client, {
      get(target, property, receiver) {
        if (property !== 'query') return Reflect.get(target, property, receiver);
        return async (...args: unknown[]) => {
          const result = await query(...args);
          const text = typeof args[0] === 'string' ? args[0] : ((args[0] as { text?: string }).text ?? '');
          if (
            /^\s*(INSERT INTO|UPDATE) (billing\.invoices|hookgate\.entity_state)/.test(text) &&
            ++writes === 1
          )
            await meet();
          return result;
        };
      },
    });
    // As the worker does: the batch's locks first, then the set-based pass.
    await handler.lockBatch?.(tx, events);
    const results = await handler.applyBatch!(
      {
        tx,
        route: () => {},
        logger: silentLogger,
      },
      events,
    );
    await client.query('COMMIT');
    return results;
  } catch (error) {
    await client.query('ROLLBACK').catch(() => {});
    throw error;
  } finally {
    await client.end();
  }
}

describe('billing batches sharing invoices', () => {
  it('apply concurrently in any order without a deadlock', async () => {
    const [x, y] = [`in_lock_x_${Date.now()}`, `in_lock_y_${Date.now()}`];
    const meet = meeting(300);
    const outcomes = await Promise.allSettled([
      applyBatch(billing, [created(x), paid(y)], meet),
      applyBatch(billing, [created(y), paid(x)], meet),
    ]);
    const failures = outcomes.flatMap((outcome) =>
      outcome.status === 'rejected' ? [String((outcome.reason as Error).message)] : [],
    );
    expect(failures).toEqual([]);
    const { rows } = await db.pool.query(
      'SELECT id, status FROM billing.invoices WHERE id = ANY($1) ORDER BY id',
      [[x, y]],
    );
    expect(rows).toEqual([
      { id: x, status: 'paid' },
      { id: y, status: 'paid' },
    ]);
    const ledger = await db.pool.query(
      'SELECT count(*)::int AS n FROM billing.ledger_entries WHERE invoice_id = ANY($1)',
      [[x, y]],
    );
    expect(ledger.rows[0].n).toBe(2);
  }, 20_000);
});

describe('projection batches sharing entities', () => {
  it('apply concurrently in any order without a deadlock', async () => {
    const [x, y] = [`cus_lock_x_${Date.now()}`, `cus_lock_y_${Date.now()}`];
    const customer = (type: string, id: string, version: number): InboxEvent => ({
      ...stripeEvent(type, { id, object: 'customer', name: `${id} v${version}` }),
      entityVersion: String(version),
    });
    await applyBatch(
      project,
      [customer('customer.created', x, 1), customer('customer.created', y, 1)],
      async () => {},
    );
    const meet = meeting(300);
    // Each round writes creating events (an upsert) before updating ones (an update): one batch
    // takes x then y, the other y then x.
    const outcomes = await Promise.allSettled([
      applyBatch(project, [customer('customer.created', x, 2), customer('customer.updated', y, 2)], meet),
      applyBatch(project, [customer('customer.created', y, 3), customer('customer.updated', x, 3)], meet),
    ]);
    const failures = outcomes.flatMap((outcome) =>
      outcome.status === 'rejected' ? [String((outcome.reason as Error).message)] : [],
    );
    expect(failures).toEqual([]);
    const { rows } = await db.pool.query(
      'SELECT entity_id, version::int FROM hookgate.entity_state WHERE entity_id = ANY($1) ORDER BY entity_id',
      [[x, y]],
    );
    expect(rows).toEqual([
      { entity_id: x, version: 3 },
      { entity_id: y, version: 3 },
    ]);
  }, 20_000);
});
