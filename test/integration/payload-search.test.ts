import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { searchEvents } from '../../services/console/read-models/events.ts';
import { releaseQuarantined } from '../../services/core/quarantine/actions.ts';
import { createTestDatabase, type TestDatabase } from '../support/database.ts';
import { post, standardWebhook } from '../support/deliveries.ts';
import { SW_SECRET, startTestGateway, type TestGateway, testConfig } from '../support/gateway.ts';
import { workerConfig } from '../support/worker-harness.ts';

// `payloadSearch` per endpoint: the claim and a quarantine release mark the rows of an endpoint
// that has it (payload_search, the predicate of the console's payload index) and leave the others'
// null, and the console's payload search finds each endpoint's events either way: through the
// index where the endpoint has it, among the rows it reads by time where not.
let db: TestDatabase;
let gateway: TestGateway;

const ENDPOINTS = {
  on: { provider: 'standard-webhooks', secrets: [SW_SECRET], payloadSearch: true },
  off: { provider: 'standard-webhooks', secrets: [SW_SECRET] },
};

beforeAll(async () => {
  db = await createTestDatabase();
  gateway = await startTestGateway(db.url, testConfig({ endpoints: ENDPOINTS }));
});

afterAll(async () => {
  await gateway?.stop();
  await db?.drop();
});

async function marks(): Promise<Record<string, boolean | null>> {
  const { rows } = await db.pool.query<{ key: string; mark: boolean | null }>(
    `SELECT endpoint || '/' || event_id AS key, payload_search AS mark FROM hookgate.inbox ORDER BY 1`,
  );
  return Object.fromEntries(rows.map((row) => [row.key, row.mark]));
}

describe('payloadSearch', () => {
  it('marks the claimed and released rows of the endpoints that have it, and only those', async () => {
    for (const endpoint of ['on', 'off']) {
      const reply = await post(
        `${gateway.url}/webhooks/${endpoint}`,
        standardWebhook(SW_SECRET, {
          eventId: `msg_${endpoint}`,
          body: JSON.stringify({ type: 'invoice.paid', data: { customer: 'cus_9' } }),
        }),
      );
      expect(reply.json).toMatchObject({ status: 'accepted' });
      // No type where the provider looks for one: held, then released with an extract pointer.
      const held = await post(
        `${gateway.url}/webhooks/${endpoint}`,
        standardWebhook(SW_SECRET, {
          eventId: `held_${endpoint}`,
          body: '{"kind":"late","data":{"customer":"cus_9"}}',
        }),
      );
      expect(held.json).toMatchObject({ status: 'quarantined' });
    }
    const { rows } = await db.pool.query<{ id: string }>(
      'SELECT id::text AS id FROM hookgate.quarantine ORDER BY id',
    );
    expect(rows).toHaveLength(2);
    const fixed = workerConfig({
      on: { ...ENDPOINTS.on, extract: { eventType: '/kind' } },
      off: { ...ENDPOINTS.off, extract: { eventType: '/kind' } },
    });
    const outcomes = await releaseQuarantined(db.pool, fixed, {
      ids: rows.map((r) => r.id),
      actor: 'ops-test',
    });
    expect(outcomes.map((o) => o.outcome)).toEqual(['accepted', 'accepted']);
    expect(await marks()).toEqual({
      'off/held_off': null,
      'off/msg_off': null,
      'on/held_on': true,
      'on/msg_on': true,
    });
  });

  it("finds every endpoint's payloads: through the index where it has payloadSearch, by time where not", async () => {
    const limits = { pageSize: 10, scanRows: 100 };
    const contains = { data: { customer: 'cus_9' } };
    const search = (endpoint?: string) =>
      searchEvents(db.pool, { contains, endpoint }, ['off', 'on'], limits, ['on']);
    const on = await search('on');
    expect(on.path).toBe('containment');
    expect(on.rows.map((r) => r.event_id).sort()).toEqual(['held_on', 'msg_on']);
    const off = await search('off');
    expect(off.path).toBe('time');
    expect(off.rows.map((r) => r.event_id).sort()).toEqual(['held_off', 'msg_off']);
    const both = await search();
    expect(both.path).toBe('time');
    expect(both.rows).toHaveLength(4);
  });
});
