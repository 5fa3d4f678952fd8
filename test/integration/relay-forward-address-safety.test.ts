import type { PgBoss } from 'pg-boss';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createForwardHandler } from '../../services/core/handlers/forward.ts';
import type { InboxEvent } from '../../services/core/handlers/types.ts';
import { startRelays } from '../../services/worker/relay.ts';
import { applyEvent, silentLogger, startBoss } from '../support/apply.ts';
import { createTestDatabase, type TestDatabase } from '../support/database.ts';
import { type FakeDownstream, startFakeDownstream } from '../support/fake-downstream.ts';

// relay.allowedDestinations covers the forward handler's relay too: its connection to a server on
// 127.0.0.1, reached by the name `localhost`, is refused at connect time (dead at once, nothing
// received), while the same list with a CIDR covering loopback lets it through.

const ENDPOINT = 'orders';
const deps = { endpoint: ENDPOINT, logger: silentLogger, configDir: process.cwd() };
const QUEUES = {
  retryLimit: 3,
  retryDelaySeconds: 0,
  retryBackoff: false,
  retryDelayMaxSeconds: 0,
  expireInSeconds: 30,
};

let db: TestDatabase;
let boss: PgBoss;
let downstream: FakeDownstream;

function orderEvent(eventId: string): InboxEvent {
  return {
    endpoint: ENDPOINT,
    eventId,
    provider: 'github',
    eventType: 'order.placed',
    entityType: 'order',
    entityId: 'o_1',
    entityVersion: null,
    payload: { id: eventId },
    headers: {},
    receivedAt: new Date(),
    attempts: 1,
    traceparent: null,
  };
}

async function settled(key: string) {
  const deadline = Date.now() + 20_000;
  for (;;) {
    const { rows } = await db.pool.query<{ status: string; attempts: number; last_error: string | null }>(
      `SELECT status, attempts, last_error FROM hookgate.outbox_deliveries WHERE kind = 'forward' AND key = $1`,
      [key],
    );
    if (rows[0] && ['delivered', 'dead'].includes(rows[0].status)) return rows[0];
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${key} to settle`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

async function sendThrough(allowedDestinations: readonly string[], eventId: string, path: string) {
  const relay = await startRelays({
    boss,
    pool: db.pool,
    logger: silentLogger,
    queues: QUEUES,
    pollingIntervalSeconds: 0.5,
    stopTimeoutMs: 500,
    allowedDestinations,
  });
  try {
    const url = `http://localhost:${new URL(downstream.url).port}${path}`;
    const handler = createForwardHandler({ url, timeout: '2s' }, deps);
    await applyEvent(db.pool, boss, handler, orderEvent(eventId));
    return await settled(`${ENDPOINT}:${eventId}`);
  } finally {
    await relay.stop();
  }
}

beforeAll(async () => {
  db = await createTestDatabase();
  boss = await startBoss(db.url);
  downstream = await startFakeDownstream();
});

afterAll(async () => {
  await downstream?.close();
  await boss?.stop({ graceful: false, close: true });
  await db?.drop();
});

describe('relay: forward under relay.allowedDestinations', () => {
  it('refuses a name resolving to loopback without a CIDR entry, and delivers with one', async () => {
    const refused = await sendThrough(['localhost'], 'evt_refused', '/refused');
    expect(refused).toMatchObject({ status: 'dead', attempts: 1 });
    expect(refused.last_error).toMatch(
      /^destination_address_refused: the address (127\.0\.0\.1|::1) \(of localhost\) is loopback/,
    );
    const allowed = await sendThrough(['127.0.0.0/8', '::1/128'], 'evt_allowed', '/allowed');
    expect(allowed).toMatchObject({ status: 'delivered', attempts: 1 });
    expect(downstream.requests.map((request) => request.path)).toEqual(['/allowed']);
  });
});
