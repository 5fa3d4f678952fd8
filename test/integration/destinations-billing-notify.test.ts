import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Config } from '../../services/core/config/schema.ts';
import { pauseDestination, redeliver, resumeDestination } from '../../services/core/destinations/actions.ts';
import { routesFrom } from '../../services/core/destinations/routes.ts';
import { createLogger } from '../../services/core/logging.ts';
import { type RunningDestinationRelay, startDestinationRelay } from '../../services/worker/destinations.ts';
import { createTestDatabase, type TestDatabase } from '../support/database.ts';
import { type FakeDownstream, startFakeDownstream } from '../support/fake-downstream.ts';
import {
  Claimer,
  startTestWorker,
  type TestEvent,
  type TestWorker,
  waitFor,
  workerConfig,
} from '../support/worker-harness.ts';

// Billing's `notify` is a destination like any other, one its handler routes to: the event that
// books a new ledger entry is routed there once (a provider sending the same payment again under
// another id books nothing and is routed nowhere), and the destination retries, pauses, resumes
// and redelivers it with one webhook-id, as every destination does.

const RETRY = { limit: 3, backoff: '100ms', max: '100ms', jitter: 0 };

let db: TestDatabase;
let downstream: FakeDownstream;
let claimer: Claimer;
let worker: TestWorker;
let relay: RunningDestinationRelay;
let config: Config;

const invoice = (
  eventId: string,
  type: string,
  id: string,
  fields: Record<string, unknown> = {},
): TestEvent => ({
  eventId,
  eventType: type,
  entityType: 'invoice',
  entityId: id,
  body: {
    id: eventId,
    type,
    data: { object: { id, object: 'invoice', currency: 'eur', amount_paid: 1200, ...fields } },
  },
});
const paid = (eventId: string, id: string) => invoice(eventId, 'invoice.paid', id, { status: 'paid' });

async function rows(endpoint = 'pay') {
  const { rows: found } = await db.pool.query<{
    id: string;
    event_id: string;
    status: string;
    attempts: number;
    webhook_id: string;
  }>(
    `SELECT id::text AS id, event_id, status, attempts, webhook_id FROM hookgate.destination_deliveries
      WHERE endpoint = $1 ORDER BY id`,
    [endpoint],
  );
  return found;
}

const ledger = async () =>
  (
    await db.pool.query<{ event_id: string }>('SELECT event_id FROM billing.ledger_entries ORDER BY event_id')
  ).rows.map((row) => row.event_id);

const applied = (endpoint: string, eventIds: readonly string[]) =>
  waitFor(`${eventIds.join(', ')} applied`, async () => {
    const { rows: found } = await db.pool.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM hookgate.inbox
        WHERE endpoint = $1 AND event_id = ANY ($2::text[]) AND status <> 'pending'`,
      [endpoint, eventIds],
    );
    return found[0]!.n === eventIds.length;
  });

const sent = () => downstream.requests.filter((request) => request.path === '/paid');

beforeAll(async () => {
  db = await createTestDatabase();
  downstream = await startFakeDownstream();
  config = workerConfig({
    pay: {
      handler: 'billing',
      options: { notify: 'ledger' },
      destinations: { ledger: { url: `${downstream.url}/paid`, routedBy: 'handler', retry: RETRY } },
    },
    // The same handler without `notify`: routes nothing.
    quiet: { handler: 'billing' },
  });
  claimer = await Claimer.start(db.url, config);
  worker = await startTestWorker(db.url, config);
  relay = startDestinationRelay({
    pool: worker.pool,
    routes: routesFrom(config),
    logger: createLogger('silent'),
    pollIntervalMs: 50,
  });
});

afterAll(async () => {
  await relay?.stop();
  await worker?.stop();
  await claimer?.stop();
  await downstream?.close();
  await db?.drop();
});

describe("billing's notify destination", () => {
  it('gets the event of each new ledger entry once, retried with one webhook-id until delivered', async () => {
    downstream.script('/paid', [503, 500, 200]);
    await claimer.claim('pay', [invoice('evt_created', 'invoice.created', 'in_1', { status: 'open' })]);
    await claimer.claim('pay', [paid('evt_paid', 'in_1')]);
    await applied('pay', ['evt_created', 'evt_paid']);
    // The same payment under another event id (as a provider re-sends a fact): books nothing.
    await claimer.claim('pay', [paid('evt_paid_again', 'in_1')]);
    // The same event id again: a duplicate, not applied again.
    await claimer.claim('pay', [paid('evt_paid', 'in_1')]);
    await claimer.claim('quiet', [paid('evt_quiet', 'in_quiet')]);
    await applied('pay', ['evt_created', 'evt_paid', 'evt_paid_again']);
    await applied('quiet', ['evt_quiet']);
    expect(await ledger()).toEqual(['evt_paid', 'evt_quiet']);

    const [delivery] = await waitFor('the notification delivered', async () => {
      const found = await rows();
      return found.length === 1 && found[0]!.status === 'delivered' ? found : null;
    });
    expect(delivery).toMatchObject({ event_id: 'evt_paid', attempts: 3 });
    expect(await rows('quiet')).toEqual([]);
    const requests = sent();
    expect(requests).toHaveLength(3);
    expect(requests.map((r) => r.headers['webhook-id'])).toEqual([
      delivery!.webhook_id,
      delivery!.webhook_id,
      delivery!.webhook_id,
    ]);
    expect(requests.map((r) => r.headers['idempotency-key'])).toEqual(
      requests.map((r) => r.headers['webhook-id']),
    );
    // What any destination sends: the event as stored, and who it is for.
    expect(JSON.parse(requests[2]!.body)).toEqual(paid('evt_paid', 'in_1').body);
    expect(requests[2]!.headers['x-hookgate-destination']).toBe('ledger');
    expect(requests[2]!.headers['x-hookgate-event-type']).toBe('invoice.paid');
  });

  it('holds while paused (no attempt spent), sends on resume, and redelivers with the same webhook-id', async () => {
    await pauseDestination(db.pool, config, { endpoint: 'pay', destination: 'ledger', actor: 'test:ops' });
    await claimer.claim('pay', [paid('evt_paid_2', 'in_2')]);
    await applied('pay', ['evt_paid_2']);
    const held = await waitFor('the notification held', async () => {
      const found = (await rows()).find((row) => row.event_id === 'evt_paid_2');
      return found?.status === 'held' ? found : null;
    });
    expect(held.attempts).toBe(0);
    expect(sent().filter((r) => r.headers['x-hookgate-event-id'] === 'evt_paid_2')).toEqual([]);

    await resumeDestination(db.pool, config, { endpoint: 'pay', destination: 'ledger', actor: 'test:ops' });
    const delivered = await waitFor('the held notification delivered', async () => {
      const found = (await rows()).find((row) => row.event_id === 'evt_paid_2');
      return found?.status === 'delivered' ? found : null;
    });
    expect(delivered.attempts).toBe(1);

    const done = await redeliver(db.pool, config, {
      endpoint: 'pay',
      destination: 'ledger',
      ids: [delivered.id],
      statuses: ['dead', 'delivered'],
      actor: 'test:ops',
      dryRun: false,
    });
    expect(done).toMatchObject({ count: 1, ids: [delivered.id] });
    await waitFor('the redelivery sent', async () => {
      const found = (await rows()).find((row) => row.event_id === 'evt_paid_2');
      return found?.status === 'delivered' && found.attempts === 2 ? found : null;
    });
    const toSecond = sent().filter((r) => r.headers['x-hookgate-event-id'] === 'evt_paid_2');
    expect(toSecond.map((r) => r.headers['webhook-id'])).toEqual([held.webhook_id, held.webhook_id]);
    // Still one delivery per ledger entry: the redelivery sent the same one again.
    expect((await rows()).map((row) => row.event_id)).toEqual(['evt_paid', 'evt_paid_2']);
    expect(await ledger()).toEqual(['evt_paid', 'evt_paid_2', 'evt_quiet']);
  });
});
