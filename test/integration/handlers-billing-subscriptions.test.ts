import { Writable } from 'node:stream';
import type { PgBoss } from 'pg-boss';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createBillingHandler } from '../../services/core/handlers/billing.ts';
import type { Handler } from '../../services/core/handlers/types.ts';
import { ApplyFailed, applyEvent, silentLogger, startBoss, stripeEvent } from '../support/apply.ts';
import { createTestDatabase, type TestDatabase } from '../support/database.ts';
import { type FakeStripe, startFakeStripe } from '../support/fake-stripe.ts';

const deps = { endpoint: 'stripe', logger: silentLogger, configDir: process.cwd() };
const KEY = 'sk_test_fake_key';

let db: TestDatabase;
let boss: PgBoss;
let stripe: FakeStripe;
let billing: Handler;
let counter = 0;
const newSubscription = () => `sub_${Date.now().toString(36)}_${++counter}`;

/** A subscription event whose payload is a (possibly outdated) snapshot. */
const subEvent = (kind: 'created' | 'updated' | 'deleted', id: string, status: string) =>
  stripeEvent(`customer.subscription.${kind}`, { id, object: 'subscription', customer: 'cus_9', status });

async function stored(id: string) {
  const { rows } = await db.pool.query(
    'SELECT status, deleted, customer_id, data, updated_by FROM billing.subscriptions WHERE id = $1',
    [id],
  );
  return rows[0];
}

const apply = (event: ReturnType<typeof subEvent>) => applyEvent(db.pool, boss, billing, event);

beforeAll(async () => {
  db = await createTestDatabase();
  boss = await startBoss(db.url);
  stripe = await startFakeStripe();
  billing = createBillingHandler({ stripeApiKey: KEY, stripeApiBase: stripe.url, stripeTimeout: '2s' }, deps);
});

afterAll(async () => {
  await stripe?.close();
  await boss?.stop({ graceful: false, close: true });
  await db?.drop();
});

describe('billing: subscriptions are re-fetched, not taken from the payload', () => {
  it('out-of-order deliveries end in the state the API reports', async () => {
    const id = newSubscription();
    stripe.setSubscription({ id, customer: 'cus_9', status: 'active', items: { data: [{ price: 'p_2' }] } });
    // Newest first, then older snapshots: payloads say otherwise, the API has the last word.
    expect(await apply(subEvent('updated', id, 'past_due'))).toBe('processed');
    expect(await apply(subEvent('created', id, 'incomplete'))).toBe('processed');
    const row = await stored(id);
    expect(row).toMatchObject({ status: 'active', deleted: false, customer_id: 'cus_9' });
    expect(row.data).toMatchObject({ id, status: 'active', items: { data: [{ price: 'p_2' }] } });
    const calls = stripe.requests.filter((r) => r.path === `/v1/subscriptions/${id}`);
    expect(calls).toHaveLength(2);
    expect(calls[0]!.authorization).toBe(`Bearer ${KEY}`);
  });

  it('a 404 from the API means deleted, even when a stale "created" arrives last', async () => {
    const id = newSubscription();
    stripe.setSubscription({ id, customer: 'cus_9', status: 'active' });
    await apply(subEvent('created', id, 'active'));
    stripe.deleteSubscription(id);
    await apply(subEvent('deleted', id, 'canceled'));
    await apply(subEvent('updated', id, 'active'));
    expect(await stored(id)).toMatchObject({ deleted: true, status: 'active', customer_id: 'cus_9' });
  });

  it('an unknown subscription that 404s is recorded as deleted', async () => {
    const id = newSubscription();
    await apply(subEvent('deleted', id, 'canceled'));
    expect(await stored(id)).toMatchObject({ deleted: true, status: null, data: null });
  });

  it('concurrent applies for one subscription are serialised: the later write carries the later fetch', async () => {
    const id = newSubscription();
    stripe.setSubscription({ id, customer: 'cus_9', status: 'trialing' });
    // The first fetch is slow, the second fast.
    stripe.delayNext(400, 0);
    {
      // The first apply fetches "trialing" slowly; meanwhile the API moves on and a second
      // event arrives. Without the per-entity lock the second could write "active" first and
      // the slow first would overwrite it with the older "trialing".
      const first = apply(subEvent('created', id, 'trialing'));
      await new Promise((resolve) => setTimeout(resolve, 100));
      stripe.setSubscription({ id, customer: 'cus_9', status: 'active' });
      const second = apply(subEvent('updated', id, 'active'));
      await Promise.all([first, second]);
    }
    expect(await stored(id)).toMatchObject({ status: 'active', deleted: false });
  });

  it('an API failure fails the apply (retried later) and writes nothing', async () => {
    const id = newSubscription();
    stripe.setSubscription({ id, status: 'active' });
    stripe.failNext(1, 500);
    // Alone in its job, the event is not run a second time within the attempt (a batch that
    // fails is rerun event by event; one event has nothing to be separated from).
    await expect(apply(subEvent('updated', id, 'active'))).rejects.toThrow(
      /Fetching subscription sub_.* from http:\/\/127\.0\.0\.1:\d+ failed \(HTTP 500\)/,
    );
    expect(await stored(id)).toBeUndefined();
    expect(await apply(subEvent('updated', id, 'active'))).toBe('processed');
    expect(await stored(id)).toMatchObject({ status: 'active' });
  });

  it('a customer.subscription.* event whose object is not a subscription is unusable: no fetch, nothing stored', async () => {
    const id = newSubscription();
    stripe.setSubscription({ id, customer: 'cus_9', status: 'active' });
    const before = stripe.requests.length;
    const mislabelled = stripeEvent('customer.subscription.updated', {
      id,
      object: 'customer',
      status: 'active',
    });
    await expect(apply(mislabelled)).rejects.toMatchObject({
      code: 'billing_payload_invalid',
      message: expect.stringMatching(/\/data\/object\/object: must be 'subscription'/),
    });
    expect(stripe.requests.length).toBe(before);
    expect(await stored(id)).toBeUndefined();
  });

  it('a re-fetch that answers another kind of object is not stored', async () => {
    const id = newSubscription();
    stripe.setSubscription({ id, object: 'customer', email: 'x@example.com' });
    await expect(apply(subEvent('updated', id, 'active'))).rejects.toMatchObject({
      code: 'billing_payload_invalid',
      message: expect.stringMatching(/returned a customer with id sub_/),
    });
    expect(await stored(id)).toBeUndefined();
  });

  it('without stripeApiKey: one warning at start; subscription events fail for good (option_missing), naming the option', async () => {
    const lines: Record<string, unknown>[] = [];
    const logger = pino(
      { formatters: { level: (label) => ({ level: label }) } },
      new Writable({
        write(chunk, _encoding, done) {
          lines.push(JSON.parse(String(chunk)));
          done();
        },
      }),
    );
    // As the worker builds it: a child logger that carries the endpoint, which the line keeps once.
    const keyless = createBillingHandler({}, { ...deps, logger: logger.child({ endpoint: 'stripe' }) });
    for (let n = 0; n < 3; n += 1) {
      const failure = await applyEvent(
        db.pool,
        boss,
        keyless,
        subEvent('updated', newSubscription(), 'active'),
      ).catch((error: unknown) => error);
      // Retrying cannot help: dead at its first attempt, not after every retry.
      expect(failure).toBeInstanceOf(ApplyFailed);
      expect((failure as ApplyFailed).result.outcome).toBe('dead');
      expect((failure as ApplyFailed).code).toBe('option_missing');
      expect((failure as Error).message).toMatch(/stripe\.options\.stripeApiKey is not set/);
    }
    expect(lines).toEqual([
      expect.objectContaining({
        level: 'warn',
        endpoint: 'stripe',
        option: 'stripeApiKey',
        code: 'option_missing',
        msg: expect.stringMatching(/customer\.subscription\.\* events will end dead at once/),
      }),
    ]);
    expect(lines[0]).not.toHaveProperty('err');
  });
});
