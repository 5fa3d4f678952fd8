import { describe, expect, it } from 'vitest';
import { type FakeDownstream, startFakeDownstream } from '../support/fake-downstream.ts';
import { waitFor } from '../support/worker-harness.ts';
import { useWorkerStack } from '../support/worker-stack.ts';

// A worker process SIGKILLed while its request to a destination is open: the delivery's lease
// runs out, and the next worker sends it again with the same webhook-id and Idempotency-Key. The
// lease (the timeout and 5 s) is run out by backdating it, not waited for; the killed attempt
// counts, and its record says that its result never came.

let downstream: FakeDownstream;

const stack = useWorkerStack({
  setup: async () => {
    downstream = await startFakeDownstream();
    stack.defer(() => downstream.close());
  },
  endpoints: () => ({
    pay: {
      handler: 'record',
      destinations: { ledger: { url: `${downstream.url}/ledger`, timeout: '1s' } },
    },
  }),
  extra: { relay: { pollingInterval: '100ms' } },
  stopSignal: 'SIGKILL',
});

describe('a worker killed mid-delivery', () => {
  it('leaves the delivery to the next worker, which sends it with the same keys; delivered once', async () => {
    // The first request is never answered while its worker lives.
    downstream.script('/ledger', [{ status: 200, delayMs: 600_000 }]);
    const first = stack.spawnWorker();
    await stack.claimer.claim('pay', [{ eventId: 'evt_kill', eventType: 'invoice.paid' }]);
    const [open] = await downstream.waitFor('/ledger', 1, 60_000);
    first.child.kill('SIGKILL');
    expect(await first.exited).toBe('SIGKILL');
    const { rows: during } = await stack.db.pool.query(
      `SELECT status, attempts FROM hookgate.destination_deliveries WHERE event_id = 'evt_kill'`,
    );
    expect(during).toEqual([{ status: 'sending', attempts: 1 }]);
    await stack.db.pool.query(
      `UPDATE hookgate.destination_deliveries SET lease_until = now() - interval '1 second'
        WHERE event_id = 'evt_kill'`,
    );

    const second = stack.spawnWorker();
    const row = await waitFor('the delivery to be delivered by the second worker', async () => {
      const { rows } = await stack.db.pool.query<{ status: string; attempts: number; webhook_id: string }>(
        `SELECT status, attempts, webhook_id FROM hookgate.destination_deliveries WHERE event_id = 'evt_kill'`,
      );
      return rows[0]?.status === 'delivered' ? rows[0] : null;
    });
    expect(row.attempts).toBe(2);
    const sent = downstream.requests.filter((r) => r.path === '/ledger');
    expect(sent).toHaveLength(2);
    expect(sent.map((r) => r.headers['webhook-id'])).toEqual([row.webhook_id, row.webhook_id]);
    expect(sent.map((r) => r.headers['idempotency-key'])).toEqual([row.webhook_id, row.webhook_id]);
    expect(open!.headers['webhook-id']).toBe(row.webhook_id);
    const { rows: attempts } = await stack.db.pool.query(
      `SELECT a.attempt, a.unrecorded, a.http_status FROM hookgate.destination_attempts a
         JOIN hookgate.destination_deliveries d ON d.id = a.delivery_id
        WHERE d.event_id = 'evt_kill' ORDER BY a.attempt`,
    );
    expect(attempts).toEqual([
      { attempt: 1, unrecorded: true, http_status: null },
      { attempt: 2, unrecorded: false, http_status: 200 },
    ]);
    second.child.kill('SIGTERM');
    expect(await second.exited).toBe(0);
  });
});
