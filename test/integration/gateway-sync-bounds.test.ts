import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { claimGate } from '../support/claims.ts';
import { createTestDatabase, type TestDatabase } from '../support/database.ts';
import { post, type Reply, standardWebhook } from '../support/deliveries.ts';
import { SW_SECRET, startTestGateway, type TestGateway, testConfig } from '../support/gateway.ts';

// Sync-mode deliveries share the gateway's pool, so they are under the same load shedding as
// async ones: at most `claim.concurrency` claim transactions at once, at most `claim.maxQueued`
// deliveries waiting, the rest refused at once with 503 overloaded.

let db: TestDatabase;
let gateway: TestGateway;
/** Holds the one commit slot while the claim of event `hold` is open. */
const { hooks, holding, release } = claimGate('hold');

beforeAll(async () => {
  db = await createTestDatabase();
  const config = testConfig({
    claim: { maxWait: '2ms', concurrency: 1, maxQueued: 2 },
    endpoints: {
      direct: { provider: 'standard-webhooks', secrets: [SW_SECRET], mode: 'sync', handler: 'record' },
    },
  });
  gateway = await startTestGateway(db.url, config, hooks);
});

afterAll(async () => {
  release();
  await gateway?.stop();
  await db?.drop();
});

const deliver = (eventId: string) =>
  post(`${gateway.url}/webhooks/direct`, standardWebhook(SW_SECRET, { eventId }));

async function status(eventId: string): Promise<string | undefined> {
  const { rows } = await db.pool.query(
    `SELECT status FROM hookgate.inbox WHERE endpoint = 'direct' AND event_id = $1`,
    [eventId],
  );
  return rows[0]?.status;
}

describe('sync mode under load shedding', { timeout: 30_000 }, () => {
  it('waits for a commit slot within claim.maxQueued and refuses the rest with 503 overloaded', async () => {
    const first = deliver('hold');
    await holding;
    // The premise: the one commit slot is taken by an open claim transaction.
    const { rows } = await db.pool.query(
      `SELECT count(*)::int AS n FROM pg_stat_activity
        WHERE datname = current_database() AND state = 'idle in transaction'`,
    );
    expect(rows[0].n).toBeGreaterThanOrEqual(1);

    const answered: { eventId: string; reply: Reply }[] = [];
    const others = ['s1', 's2', 's3', 's4'].map((eventId) =>
      deliver(eventId).then((reply) => {
        answered.push({ eventId, reply });
        return reply;
      }),
    );
    // Two wait for the slot; two are refused at once, while the slot is still held.
    const deadline = Date.now() + 10_000;
    while (answered.length < 2 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
    expect(answered).toHaveLength(2);
    for (const { reply } of answered) {
      expect(reply.status).toBe(503);
      expect(reply.json.error).toBe('overloaded');
    }
    const refused = answered.map((a) => a.eventId);

    release();
    expect((await first).status).toBe(200);
    const replies = await Promise.all(others);
    const accepted = ['s1', 's2', 's3', 's4'].filter((_, i) => replies[i]!.status === 200);
    expect(accepted).toHaveLength(2);
    // Sync mode: applied by the time the 200 arrived; the refused left nothing behind.
    for (const eventId of ['hold', ...accepted]) expect(await status(eventId)).toBe('processed');
    for (const eventId of refused) expect(await status(eventId)).toBeUndefined();
  });
});
