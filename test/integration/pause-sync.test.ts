import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { pauseEndpoint, resumeEndpoint } from '../../services/core/pause/pause.ts';
import { createTestDatabase, type TestDatabase } from '../support/database.ts';
import { post, standardWebhook } from '../support/deliveries.ts';
import { SW_SECRET, startTestGateway, type TestGateway, testConfig } from '../support/gateway.ts';
import { startTestWorker, type TestWorker, waitFor } from '../support/worker-harness.ts';

// A paused sync-mode endpoint: the gateway still accepts, but stores the event with a job instead
// of applying it in the request; after resume a worker applies it.
let db: TestDatabase;
let gateway: TestGateway;

const config = testConfig({
  endpoints: {
    direct: { provider: 'standard-webhooks', secrets: [SW_SECRET], mode: 'sync', handler: 'record' },
  },
});

beforeAll(async () => {
  db = await createTestDatabase();
  gateway = await startTestGateway(db.url, config);
});

afterAll(async () => {
  await gateway?.stop();
  await db?.drop();
});

const deliver = (eventId: string) =>
  post(`${gateway.url}/webhooks/direct`, standardWebhook(SW_SECRET, { eventId }));
const rowOf = async (eventId: string) =>
  (
    await db.pool.query<{ status: string; attempts: number; dispatch_job: string | null }>(
      `SELECT status, attempts, dispatch_job::text AS dispatch_job FROM hookgate.inbox WHERE endpoint = 'direct' AND event_id = $1`,
      [eventId],
    )
  ).rows[0];

describe('pause on a sync-mode endpoint', { timeout: 60_000 }, () => {
  it('accepts and holds while paused, and a worker applies the event after resume', async () => {
    const before = await deliver('s_before');
    expect(before.status).toBe(200);
    expect((await rowOf('s_before'))?.status).toBe('processed');

    await pauseEndpoint(db.pool, { endpoint: 'direct', actor: 'alice' });
    const during = await deliver('s_paused');
    expect(during.status, JSON.stringify(during.json)).toBe(200);
    const held = await rowOf('s_paused');
    expect(held).toMatchObject({ status: 'pending', attempts: 0 });
    expect(held?.dispatch_job).not.toBeNull();

    await resumeEndpoint(db.pool, { endpoint: 'direct', actor: 'alice' });
    let worker: TestWorker | undefined;
    try {
      worker = await startTestWorker(db.url, config);
      await waitFor(
        'the held event to be applied',
        async () => (await rowOf('s_paused'))?.status === 'processed',
      );
      expect((await rowOf('s_paused'))?.attempts).toBe(1);
    } finally {
      await worker?.stop();
    }
  });
});
