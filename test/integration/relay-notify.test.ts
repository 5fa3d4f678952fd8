import type { PgBoss } from 'pg-boss';
import { Registry } from 'prom-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createBillingHandler } from '../../services/core/handlers/billing.ts';
import { outboxDeadLetterQueue, outboxJobIdFor, outboxQueue } from '../../services/core/queue/names.ts';
import type { OutboxQueueSettings } from '../../services/core/queue/queues.ts';
import { ensureQueues } from '../../services/core/queue/queues.ts';
import { createRelayMetrics, type RelayMetrics, startRelays } from '../../services/worker/relay.ts';
import { applyEvent, silentLogger, startBoss, stripeEvent } from '../support/apply.ts';
import { createTestDatabase, type TestDatabase } from '../support/database.ts';
import { type FakeDownstream, startFakeDownstream } from '../support/fake-downstream.ts';

const deps = { endpoint: 'stripe', logger: silentLogger, configDir: process.cwd() };
const QUEUES: OutboxQueueSettings = {
  retryLimit: 2,
  retryDelaySeconds: 0,
  retryBackoff: false,
  retryDelayMaxSeconds: 0,
  expireInSeconds: 30,
};

let db: TestDatabase;
let boss: PgBoss;
let downstream: FakeDownstream;
let relay: { stop(): Promise<void> };
const registry = new Registry();
let metrics: RelayMetrics;
let counter = 0;
const newInvoice = () => `in_${Date.now().toString(36)}_${++counter}`;

const paid = (id: string) =>
  stripeEvent('invoice.paid', {
    id,
    object: 'invoice',
    customer: 'cus_7',
    status: 'paid',
    currency: 'usd',
    amount_due: 500,
    amount_paid: 500,
  });

async function waitUntil<T>(
  probe: () => Promise<T | undefined>,
  what: string,
  timeoutMs = 20_000,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

const settled = (key: string) =>
  waitUntil(async () => {
    const { rows } = await db.pool.query(
      `SELECT status, attempts, url, endpoint FROM hookgate.outbox_deliveries
        WHERE kind = 'notify' AND key = $1 AND status IN ('delivered', 'dead', 'nowhere')`,
      [key],
    );
    return rows[0];
  }, `notification ${key}`);

beforeAll(async () => {
  db = await createTestDatabase();
  boss = await startBoss(db.url);
  downstream = await startFakeDownstream();
  // As at worker start: ensureQueues creates missing outbox queues with defaults first.
  await ensureQueues(boss, []);
  metrics = createRelayMetrics(registry);
  relay = await startRelays({
    metrics,
    boss,
    pool: db.pool,
    logger: silentLogger,
    queues: QUEUES,
    pollingIntervalSeconds: 0.5,
  });
});

afterAll(async () => {
  await relay?.stop();
  await downstream?.close();
  await boss?.stop({ graceful: false, close: true });
  await db?.drop();
});

describe('relay: notify (billing)', () => {
  it('the relay applies its own retry policy and dead-letter queue to queues created earlier', async () => {
    for (const kind of ['notify', 'forward']) {
      expect(await boss.getQueue(outboxQueue(kind))).toMatchObject({
        retryLimit: 2,
        retryDelay: 0,
        retryBackoff: false,
        deadLetter: outboxDeadLetterQueue(kind),
      });
    }
  });

  it('a booked payment is notified once to notifyUrl with Idempotency-Key <invoice>:paid', async () => {
    const billing = createBillingHandler({ notifyUrl: `${downstream.url}/billing` }, deps);
    const id = newInvoice();
    downstream.script('/billing', [502, 200]);
    const first = paid(id);
    await applyEvent(db.pool, boss, billing, first);
    // The same payment again under another event id: absorbed, nothing more to notify.
    await applyEvent(db.pool, boss, billing, paid(id));
    expect(await settled(`${id}:paid`)).toMatchObject({
      status: 'delivered',
      attempts: 2,
      endpoint: 'stripe',
    });
    await new Promise((resolve) => setTimeout(resolve, 1_000));
    const requests = downstream.requests.filter((r) => r.path === '/billing');
    expect(requests).toHaveLength(2);
    // Counted under its own outbox kind.
    const counted = (await metrics.deliveries.get()).values
      .filter((v) => v.labels.kind === 'notify' && v.labels.endpoint === 'stripe')
      .map((v) => [v.labels.outcome, v.value]);
    expect(Object.fromEntries(counted)).toMatchObject({ retry: 1, delivered: 1 });
    for (const request of requests) {
      expect(request.headers['idempotency-key']).toBe(`${id}:paid`);
      expect(request.headers['x-hookgate-kind']).toBe('notify');
      expect(JSON.parse(request.body)).toMatchObject({
        type: 'invoice.paid',
        invoice: id,
        customer: 'cus_7',
        amount: 500,
        currency: 'usd',
        source: { endpoint: 'stripe', eventId: first.eventId },
      });
    }
  });

  it('without notifyUrl no notification is queued at all, and the payment is booked', async () => {
    const billing = createBillingHandler({}, deps);
    const id = newInvoice();
    await applyEvent(db.pool, boss, billing, paid(id));
    const { rows } = await db.pool.query(
      'SELECT count(*)::int AS n FROM pgboss.job WHERE name = $1 AND id = $2',
      [outboxQueue('notify'), outboxJobIdFor('notify', `${id}:paid`)],
    );
    expect(rows).toEqual([{ n: 0 }]);
    const ledger = await db.pool.query(
      'SELECT count(*)::int AS n FROM billing.ledger_entries WHERE invoice_id = $1',
      [id],
    );
    expect(ledger.rows).toEqual([{ n: 1 }]);
  });

  it('a malformed outbox message is dead-lettered at once instead of retried', async () => {
    const key = `bad_${++counter}`;
    await boss.send(
      outboxQueue('notify'),
      { kind: 'notify', key, payload: { url: 'nope' } },
      {
        id: outboxJobIdFor('notify', key),
      },
    );
    const found = await waitUntil(async () => {
      const { rows } = await db.pool.query(
        'SELECT state, retry_count, output FROM pgboss.job WHERE id = $1',
        [outboxJobIdFor('notify', key)],
      );
      return rows[0]?.state === 'failed' ? rows[0] : undefined;
    }, 'the malformed job to fail');
    expect(found.retry_count).toBe(0);
    expect(found.output.error).toMatch(/outbox message is malformed at \/url/);
  });
});
