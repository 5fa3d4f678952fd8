import { describe, expect, it } from 'vitest';
import { type FakeDownstream, startFakeDownstream } from '../support/fake-downstream.ts';
import { waitFor } from '../support/worker-harness.ts';
import { useWorkerStack } from '../support/worker-stack.ts';

// A worker process SIGKILLed while its request to a destination is open: the delivery's lease
// runs out, and the next worker sends it again with the same webhook-id and Idempotency-Key.

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
    second.child.kill('SIGTERM');
    expect(await second.exited).toBe(0);
  });
});
