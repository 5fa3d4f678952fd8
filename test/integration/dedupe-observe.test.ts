import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseConfig } from '../../services/core/config/load.ts';
import type { Config } from '../../services/core/config/schema.ts';
import { createTestDatabase, type TestDatabase } from '../support/database.ts';
import { post, standardWebhook } from '../support/deliveries.ts';
import { SW_SECRET, startTestGateway, type TestGateway } from '../support/gateway.ts';
import {
  FAST_WORKER,
  startTestWorker,
  type TestWorker,
  unfinishedJobs,
  waitFor,
} from '../support/worker-harness.ts';

// `dedupe: observe` (for a team putting hookgate in front of an existing receiver): a duplicate
// is answered and counted as a duplicate, and still handed to the handler again. `enforce` (the
// default): a duplicate changes nothing.
let db: TestDatabase;
let gateway: TestGateway;
let worker: TestWorker;

const handler = `sql:INSERT INTO public.dispatches (endpoint, event_id) VALUES ($1::jsonb->>'endpoint', $1::jsonb->>'event_id')`;

beforeAll(async () => {
  db = await createTestDatabase();
  await db.pool.query(
    `CREATE TABLE public.dispatches (seq bigserial PRIMARY KEY, endpoint text NOT NULL, event_id text NOT NULL)`,
  );
  const config: Config = parseConfig(
    {
      claim: { maxWait: '2ms' },
      worker: FAST_WORKER,
      endpoints: {
        watched: { provider: 'standard-webhooks', secrets: [SW_SECRET], handler, dedupe: 'observe' },
        strict: { provider: 'standard-webhooks', secrets: [SW_SECRET], handler },
      },
    },
    {},
  );
  gateway = await startTestGateway(db.url, config);
  worker = await startTestWorker(db.url, config);
});

afterAll(async () => {
  await worker?.stop();
  await gateway?.stop();
  await db?.drop();
});

async function dispatches(endpoint: string, eventId: string): Promise<number> {
  const result = await db.pool.query(
    'SELECT count(*)::int AS n FROM public.dispatches WHERE endpoint = $1 AND event_id = $2',
    [endpoint, eventId],
  );
  return result.rows[0].n;
}

async function counted(endpoint: string) {
  const result = await db.pool.query(
    'SELECT sum(accepted)::int AS accepted, sum(duplicate)::int AS duplicate FROM hookgate.delivery_counts WHERE endpoint = $1',
    [endpoint],
  );
  return result.rows[0];
}

async function processed(endpoint: string, eventId: string): Promise<boolean> {
  const result = await db.pool.query(
    'SELECT status FROM hookgate.inbox WHERE endpoint = $1 AND event_id = $2',
    [endpoint, eventId],
  );
  return result.rows[0]?.status === 'processed';
}

describe('dedupe modes', () => {
  it('observe: a duplicate is counted and dispatched again', async () => {
    const delivery = standardWebhook(SW_SECRET);
    expect((await post(`${gateway.url}/webhooks/watched`, delivery)).json).toMatchObject({
      status: 'accepted',
    });
    await waitFor('first dispatch', async () => (await dispatches('watched', delivery.eventId)) === 1);
    await waitFor('settled', () => processed('watched', delivery.eventId));
    const again = await post(`${gateway.url}/webhooks/watched`, delivery);
    expect(again.status).toBe(200);
    expect(again.json).toMatchObject({ status: 'duplicate' });
    await waitFor('second dispatch', async () => (await dispatches('watched', delivery.eventId)) === 2);
    await waitFor('settled again', () => processed('watched', delivery.eventId));
    expect(await counted('watched')).toEqual({ accepted: 1, duplicate: 1 });
  });

  it('enforce (default): a duplicate is counted and not dispatched', async () => {
    const delivery = standardWebhook(SW_SECRET);
    await post(`${gateway.url}/webhooks/strict`, delivery);
    await waitFor('first dispatch', async () => (await dispatches('strict', delivery.eventId)) === 1);
    await waitFor('settled', () => processed('strict', delivery.eventId));
    expect((await post(`${gateway.url}/webhooks/strict`, delivery)).json).toMatchObject({
      status: 'duplicate',
    });
    // A sentinel through the same path after it: once the sentinel is applied and the queue has
    // nothing left to run, a (wrong) second dispatch of the duplicate would have happened.
    const sentinel = standardWebhook(SW_SECRET);
    expect((await post(`${gateway.url}/webhooks/strict`, sentinel)).json).toMatchObject({
      status: 'accepted',
    });
    await waitFor(
      'the sentinel dispatched',
      async () => (await dispatches('strict', sentinel.eventId)) === 1,
    );
    await waitFor('nothing left in the queue', async () => (await unfinishedJobs(db.pool, 'strict')) === 0);
    expect(await dispatches('strict', delivery.eventId)).toBe(1);
    // The event and the sentinel accepted, the event's second delivery a duplicate.
    expect(await counted('strict')).toEqual({ accepted: 2, duplicate: 1 });
  });
});
