import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase, type TestDatabase } from '../support/database.ts';
import { post, standardWebhook } from '../support/deliveries.ts';
import { SW_SECRET, startTestGateway, type TestGateway, testConfig } from '../support/gateway.ts';

// DESIGN.md promise 8: a verified delivery that cannot become an inbox event is kept in
// hookgate.quarantine and acknowledged; an unverified one is still refused and kept nowhere.
let db: TestDatabase;
let gateway: TestGateway;

beforeAll(async () => {
  db = await createTestDatabase();
  gateway = await startTestGateway(
    db.url,
    testConfig({ endpoints: { alpha: { provider: 'standard-webhooks', secrets: [SW_SECRET] } } }),
  );
});

afterAll(async () => {
  await gateway?.stop();
  await db?.drop();
});

// The Standard Webhooks specification's own example body: no `type` anywhere.
const SPEC_EXAMPLE = '{"test": 2432232314}';

const held = async () =>
  (
    await db.pool.query(
      `SELECT endpoint, reason, convert_from(body, 'UTF8') AS body, headers->>'webhook-id' AS webhook_id
         FROM hookgate.quarantine ORDER BY id`,
    )
  ).rows;
const inboxRows = async () =>
  (await db.pool.query('SELECT count(*)::int AS n FROM hookgate.inbox')).rows[0].n as number;

describe('quarantine at the gateway', () => {
  it('keeps an authentic delivery without a type, answers 200 quarantined, stores no inbox row', async () => {
    const delivery = standardWebhook(SW_SECRET, { eventId: 'msg_spec_example', body: SPEC_EXAMPLE });
    const reply = await post(`${gateway.url}/webhooks/alpha`, delivery);
    expect([reply.status, reply.json]).toEqual([
      200,
      { status: 'quarantined', reason: 'event_type_missing' },
    ]);
    expect(await held()).toEqual([
      { endpoint: 'alpha', reason: 'event_type_missing', body: SPEC_EXAMPLE, webhook_id: 'msg_spec_example' },
    ]);
    expect(await inboxRows()).toBe(0);
  });

  it("stores a provider's retry of the same body once, answering it the same", async () => {
    // A retry is signed again (a new timestamp) over the same body.
    const retry = standardWebhook(SW_SECRET, {
      eventId: 'msg_spec_example',
      body: SPEC_EXAMPLE,
      at: new Date(Date.now() + 1000),
    });
    const reply = await post(`${gateway.url}/webhooks/alpha`, retry);
    expect([reply.status, reply.json]).toEqual([
      200,
      { status: 'quarantined', reason: 'event_type_missing' },
    ]);
    expect(await held()).toHaveLength(1);
  });

  it('refuses a forged delivery with 401 and stores nothing', async () => {
    const forged = standardWebhook('whsec_QUFBQUFBQUFBQUFBQUFBQUFBQUFBQUFBQUFBQUFBQUE=', {
      body: '{"forged": true}',
    });
    const reply = await post(`${gateway.url}/webhooks/alpha`, forged);
    expect([reply.status, reply.json.error]).toEqual([401, 'signature_invalid']);
    expect(await held()).toHaveLength(1);
    expect(await inboxRows()).toBe(0);
  });

  it('counts quarantined deliveries under outcome="quarantined"', async () => {
    const metric = await gateway.registry.getSingleMetric('hookgate_deliveries_total')?.get();
    const quarantined = metric?.values.find(
      (value) => value.labels.outcome === 'quarantined' && value.labels.endpoint === 'alpha',
    );
    expect(quarantined?.value).toBe(2);
  });
});
