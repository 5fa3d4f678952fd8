import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { releaseQuarantined } from '../../services/core/quarantine/actions.ts';
import { createTestDatabase, type TestDatabase } from '../support/database.ts';
import { post, standardWebhook } from '../support/deliveries.ts';
import { SW_SECRET, startTestGateway, type TestGateway, testConfig } from '../support/gateway.ts';
import { workerConfig } from '../support/worker-harness.ts';

// A released delivery keeps its arrival: the inbox row's received_at is when the provider sent
// it (the quarantine row's), not when an operator released it, and it says how it came in.
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

describe('quarantine release', () => {
  it("stores the event as received when the delivery arrived, flagged received_via = 'quarantine_release'", async () => {
    const reply = await post(
      `${gateway.url}/webhooks/alpha`,
      standardWebhook(SW_SECRET, { eventId: 'msg_arrival', body: '{"test": 1}' }),
    );
    expect(reply.json).toMatchObject({ status: 'quarantined' });
    // Arrived two hours ago (backdated, never waited for).
    const { rows } = await db.pool.query<{ id: string; received_at: Date }>(
      `UPDATE hookgate.quarantine SET received_at = received_at - interval '2 hours'
        WHERE headers->>'webhook-id' = 'msg_arrival' RETURNING id::text AS id, received_at`,
    );
    const held = rows[0]!;
    const fixed = workerConfig({ alpha: { extract: { eventType: '/test' } } });
    const outcomes = await releaseQuarantined(db.pool, fixed, { ids: [held.id], actor: 'ops-test' });
    expect(outcomes).toMatchObject([{ id: held.id, outcome: 'accepted' }]);
    const inbox = await db.pool.query<{ received_at: Date; received_via: string }>(
      `SELECT received_at, received_via FROM hookgate.inbox WHERE event_id = 'msg_arrival'`,
    );
    expect(inbox.rows).toEqual([{ received_at: held.received_at, received_via: 'quarantine_release' }]);
  });
});
