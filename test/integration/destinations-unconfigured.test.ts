import { Registry } from 'prom-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { listDeliveries, redeliver } from '../../services/core/destinations/actions.ts';
import { insertDeliveries } from '../../services/core/destinations/deliveries.ts';
import { routesFrom } from '../../services/core/destinations/routes.ts';
import { createLogger } from '../../services/core/logging.ts';
import { endUnconfigured } from '../../services/worker/destination-sweep.ts';
import { createDestinationMetrics, startDestinationRelay } from '../../services/worker/destinations.ts';
import { createTestDatabase, type TestDatabase } from '../support/database.ts';
import { type FakeDownstream, startFakeDownstream } from '../support/fake-downstream.ts';
import { waitFor, workerConfig } from '../support/worker-harness.ts';

// A delivery row names its endpoint and destination; the relay looks everything else up in the
// loaded configuration. A row whose destination that configuration does not have (it was
// removed, or the row was written by someone else) is claimed by no loop: when the relay starts
// it ends such rows dead, with a sentence, counted, and listed like any dead delivery; once the
// destination is configured again, redeliver sends them.

let db: TestDatabase;
let downstream: FakeDownstream;
/** The database's now, given to the sweep as its clock (the live lease below is an hour past it). */
let NOW: Date;

beforeAll(async () => {
  db = await createTestDatabase();
  downstream = await startFakeDownstream();
  NOW = (await db.pool.query<{ now: Date }>('SELECT now()')).rows[0]!.now;
});

afterAll(async () => {
  await downstream?.close();
  await db?.drop();
});

const withDestinations = (destinations: Record<string, unknown>) =>
  workerConfig({ pay: { handler: 'record', destinations } });

async function statuses() {
  const { rows } = await db.pool.query<{ key: string; status: string; last_error: string | null }>(
    `SELECT destination || '/' || event_id AS key, status, last_error FROM hookgate.destination_deliveries
      ORDER BY destination, event_id`,
  );
  return rows;
}

describe('deliveries to a destination the configuration does not have', () => {
  it('end dead at the start of the relay, with a sentence, and are sent once the destination is back', async () => {
    const row = (destination: string, eventId: string) => ({
      destination,
      eventId,
      eventType: 't',
      webhookId: `msg_${destination}_${eventId}`,
      entityKey: null,
      entityVersion: null,
    });
    await insertDeliveries(db.pool, 'pay', [
      row('gone', 'e_pending'),
      row('gone', 'e_retrying'),
      row('gone', 'e_held'),
      row('gone', 'e_sending_lost'),
      row('gone', 'e_sending_live'),
      row('gone', 'e_delivered'),
      row('kept', 'e_pending'),
    ]);
    for (const id of ['e_pending', 'e_retrying', 'e_held', 'e_sending_lost', 'e_sending_live', 'e_delivered'])
      await db.pool.query(
        `INSERT INTO hookgate.inbox (endpoint, event_id, provider, event_type, payload, status, attempts)
         VALUES ('pay', $1, 'standard-webhooks', 't', '{"id": 1}', 'processed', 1)`,
        [id],
      );
    await db.pool.query(
      `UPDATE hookgate.destination_deliveries d
          SET status = v.status, attempts = v.attempts, lease_until = v.lease
         FROM (VALUES ('e_retrying', 'retrying', 1, NULL::timestamptz),
                      ('e_held', 'held', 0, NULL),
                      ('e_sending_lost', 'sending', 1, $1::timestamptz - interval '1 second'),
                      ('e_sending_live', 'sending', 1, $1::timestamptz + interval '1 hour'),
                      ('e_delivered', 'delivered', 1, NULL)) AS v(event_id, status, attempts, lease)
        WHERE d.destination = 'gone' AND d.event_id = v.event_id`,
      [NOW],
    );
    const registry = new Registry();
    const metrics = createDestinationMetrics(registry);
    // Run once, as the relay does when it starts, with a configuration that has `kept` only.
    const ended = await endUnconfigured({
      pool: db.pool,
      routes: routesFrom(withDestinations({ kept: { url: 'http://127.0.0.1:9/kept' } })),
      logger: createLogger('silent'),
      metrics,
      now: NOW,
    });
    expect(ended).toBe(4);
    const sentence =
      'destination_unconfigured: the configuration has no destination gone on endpoint pay, so nothing was sent; put the destination back and redeliver (hookgate redeliver --destination gone) to send it';
    expect(await statuses()).toEqual([
      { key: 'gone/e_delivered', status: 'delivered', last_error: null },
      { key: 'gone/e_held', status: 'dead', last_error: sentence },
      { key: 'gone/e_pending', status: 'dead', last_error: sentence },
      { key: 'gone/e_retrying', status: 'dead', last_error: sentence },
      { key: 'gone/e_sending_live', status: 'sending', last_error: null },
      { key: 'gone/e_sending_lost', status: 'dead', last_error: sentence },
      { key: 'kept/e_pending', status: 'pending', last_error: null },
    ]);
    const counted = await registry.getSingleMetric('hookgate_destination_deliveries_total')?.get();
    expect(counted?.values).toEqual([
      { labels: { endpoint: 'pay', destination: 'gone', outcome: 'dead' }, value: 4 },
    ]);
    // Listed with every dead delivery, whatever the configuration says.
    const dead = await listDeliveries(db.pool, { status: 'dead', limit: 10 });
    expect(dead.map((delivery) => delivery.event_id).sort()).toEqual([
      'e_held',
      'e_pending',
      'e_retrying',
      'e_sending_lost',
    ]);
    // Ended rows stay ended: a second start changes nothing.
    expect(
      await endUnconfigured({
        pool: db.pool,
        routes: routesFrom(withDestinations({ kept: { url: 'http://127.0.0.1:9/kept' } })),
        logger: createLogger('silent'),
        now: NOW,
      }),
    ).toBe(0);

    // The destination is back: redeliver sends what was ended, with its webhook-id.
    const back = withDestinations({ gone: { url: `${downstream.url}/gone` } });
    const done = await redeliver(db.pool, back, { destination: 'gone', actor: 'test', dryRun: false });
    expect(done.count).toBe(4);
    const relay = startDestinationRelay({
      pool: db.pool,
      routes: routesFrom(back),
      logger: createLogger('silent'),
      pollIntervalMs: 50,
    });
    try {
      await waitFor('the redelivered rows delivered', async () => {
        const { rows } = await db.pool.query<{ n: number }>(
          `SELECT count(*)::int AS n FROM hookgate.destination_deliveries WHERE destination = 'gone' AND status = 'delivered'`,
        );
        return rows[0]!.n === 5;
      });
    } finally {
      await relay.stop();
    }
    const sent = downstream.requests.filter((request) => request.path === '/gone');
    expect(sent.map((request) => request.headers['webhook-id']).sort()).toEqual([
      'msg_gone_e_held',
      'msg_gone_e_pending',
      'msg_gone_e_retrying',
      'msg_gone_e_sending_lost',
    ]);
  });
});
