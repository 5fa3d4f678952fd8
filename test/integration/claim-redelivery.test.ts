import type { PgBoss } from 'pg-boss';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { prune } from '../../services/core/inbox/prune.ts';
import { applyQueue, jobIdFor } from '../../services/core/queue/names.ts';
import { startBoss } from '../support/apply.ts';
import { createTestDatabase, type TestDatabase } from '../support/database.ts';
import { post, standardWebhook } from '../support/deliveries.ts';
import { startTestGateway, type TestGateway } from '../support/gateway.ts';
import { startTestWorker, type TestWorker, waitFor, workerConfig } from '../support/worker-harness.ts';

// A redelivery at any time — before or after the inbox row is pruned, while pg-boss still keeps
// the event's finished job under the same deterministic id or after it deleted it — is either a
// duplicate or applied, never accepted and left without a job.

const SECRET = 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw';
const DAY = 86_400_000;

const config = workerConfig({
  redo: { handler: 'record' },
  // Not served by the long-running worker: tests put its jobs in a chosen state by hand.
  idle: { handler: 'record' },
  strict: { handler: 'record' },
});

let db: TestDatabase;
let boss: PgBoss;
let gateway: TestGateway;
let worker: TestWorker;

beforeAll(async () => {
  db = await createTestDatabase();
  boss = await startBoss(db.url);
  // A queue whose policy lets only one job wait at a time: pg-boss skips the second insert.
  await boss.createQueue(applyQueue('strict'), { policy: 'short' });
  gateway = await startTestGateway(db.url, config);
  worker = await startTestWorker(db.url, config, { endpoints: ['redo'] });
});

afterAll(async () => {
  await worker?.stop();
  await gateway?.stop();
  await boss?.stop({ graceful: false, close: true });
  await db?.drop();
});

async function row(endpoint: string, eventId: string) {
  const { rows } = await db.pool.query(
    'SELECT status, attempts FROM hookgate.inbox WHERE endpoint = $1 AND event_id = $2',
    [endpoint, eventId],
  );
  return rows[0] as { status: string; attempts: number } | undefined;
}

async function jobState(endpoint: string, eventId: string): Promise<string | null> {
  const job = await boss.getJobById(applyQueue(endpoint), jobIdFor(endpoint, eventId));
  return job?.state ?? null;
}

const processed = (endpoint: string, eventId: string) =>
  waitFor(
    `${endpoint}/${eventId} processed`,
    async () => (await row(endpoint, eventId))?.status === 'processed',
    15_000,
  );

/** The real retention path: the row ages past the window and `prune` deletes it. */
async function pruneRow(endpoint: string, eventId: string): Promise<void> {
  await db.pool.query(
    `UPDATE hookgate.inbox SET received_at = now() - interval '40 days' WHERE endpoint = $1 AND event_id = $2`,
    [endpoint, eventId],
  );
  const report = await prune(db.pool, {
    inboxOlderThanMs: 30 * DAY,
    deliveriesOlderThanMs: 90 * DAY,
    chunk: 100,
  });
  expect(report.inboxRows).toBe(1);
  expect(await row(endpoint, eventId)).toBeUndefined();
}

const deliver = (endpoint: string, eventId: string) =>
  post(`${gateway.url}/webhooks/${endpoint}`, standardWebhook(SECRET, { eventId }));

describe('redelivery of an event whose job id is already taken', { timeout: 60_000 }, () => {
  it('before prune: a duplicate, and the completed job is left as it is', async () => {
    expect((await deliver('redo', 'dup_1')).json.status).toBe('accepted');
    await processed('redo', 'dup_1');
    await waitFor('job completed', async () => (await jobState('redo', 'dup_1')) === 'completed');
    const reply = await deliver('redo', 'dup_1');
    expect(reply.status).toBe(200);
    expect(reply.json.status).toBe('duplicate');
    expect(await row('redo', 'dup_1')).toMatchObject({ status: 'processed', attempts: 1 });
    expect(await jobState('redo', 'dup_1')).toBe('completed');
  });

  it('before prune, once pg-boss has deleted the completed job: a duplicate, no new job', async () => {
    expect((await deliver('redo', 'dup_2')).json.status).toBe('accepted');
    await processed('redo', 'dup_2');
    await waitFor('job completed', async () => (await jobState('redo', 'dup_2')) === 'completed');
    await boss.deleteJob(applyQueue('redo'), jobIdFor('redo', 'dup_2'));
    expect(await jobState('redo', 'dup_2')).toBeNull();
    expect((await deliver('redo', 'dup_2')).json.status).toBe('duplicate');
    expect(await jobState('redo', 'dup_2')).toBeNull();
    expect(await row('redo', 'dup_2')).toMatchObject({ status: 'processed', attempts: 1 });
  });

  it('after prune, while pg-boss still retains the completed job: accepted and applied', async () => {
    expect((await deliver('redo', 'pruned_1')).json.status).toBe('accepted');
    await processed('redo', 'pruned_1');
    await waitFor('job completed', async () => (await jobState('redo', 'pruned_1')) === 'completed');
    await pruneRow('redo', 'pruned_1');
    // The premise: the old job still holds the id the redelivery's job needs.
    expect(await jobState('redo', 'pruned_1')).toBe('completed');

    const reply = await deliver('redo', 'pruned_1');
    expect(reply.status).toBe(200);
    expect(reply.json.status).toBe('accepted');
    await processed('redo', 'pruned_1');
    expect(await row('redo', 'pruned_1')).toMatchObject({ status: 'processed', attempts: 1 });
  });

  it('after prune, once pg-boss has deleted the job too: accepted and applied', async () => {
    expect((await deliver('redo', 'pruned_2')).json.status).toBe('accepted');
    await processed('redo', 'pruned_2');
    await waitFor('job completed', async () => (await jobState('redo', 'pruned_2')) === 'completed');
    await pruneRow('redo', 'pruned_2');
    await boss.deleteJob(applyQueue('redo'), jobIdFor('redo', 'pruned_2'));
    expect(await jobState('redo', 'pruned_2')).toBeNull();

    expect((await deliver('redo', 'pruned_2')).json.status).toBe('accepted');
    await processed('redo', 'pruned_2');
  });

  it('an old job still waiting to run is kept, and it applies the redelivered event', async () => {
    await boss.insert(applyQueue('idle'), [
      { id: jobIdFor('idle', 'waiting_1'), data: { endpoint: 'idle', eventId: 'waiting_1' } },
    ]);
    expect((await deliver('idle', 'waiting_1')).json.status).toBe('accepted');
    expect(await jobState('idle', 'waiting_1')).toBe('created');
    const idleWorker = await startTestWorker(db.url, config, { endpoints: ['idle'] });
    try {
      await processed('idle', 'waiting_1');
    } finally {
      await idleWorker.stop();
    }
  });

  it('an old job running right now: 503 and nothing kept; accepted and applied once it has finished', async () => {
    const id = jobIdFor('idle', 'running_1');
    await boss.insert(applyQueue('idle'), [{ id, data: { endpoint: 'idle', eventId: 'running_1' } }]);
    const [fetched] = await boss.fetch(applyQueue('idle'));
    // The premise: that attempt is running (it would find no inbox row and complete its job).
    expect(fetched?.id).toBe(id);
    expect(await jobState('idle', 'running_1')).toBe('active');

    const refused = await deliver('idle', 'running_1');
    expect(refused.status).toBe(503);
    // Its own code (and metrics outcome): an earlier attempt still running is not a database
    // outage, and must not page anyone as one.
    expect(refused.json.error).toBe('job_busy');
    expect(await row('idle', 'running_1')).toBeUndefined();

    await boss.complete(applyQueue('idle'), id);
    expect((await deliver('idle', 'running_1')).json.status).toBe('accepted');
    expect(await jobState('idle', 'running_1')).toBe('created');
    const idleWorker = await startTestWorker(db.url, config, { endpoints: ['idle'] });
    try {
      await processed('idle', 'running_1');
    } finally {
      await idleWorker.stop();
    }
  });

  it('a job pg-boss will not create is never accepted silently', async () => {
    // The premise: one job already waits on the one-at-a-time queue, so pg-boss skips the next.
    const blocker = await boss.insert(
      applyQueue('strict'),
      [{ data: { endpoint: 'strict', eventId: 'blocker' } }],
      { returnId: true },
    );
    expect(blocker).toHaveLength(1);
    const refused = await deliver('strict', 'skipped_1');
    expect(refused.status).toBe(503);
    expect(await row('strict', 'skipped_1')).toBeUndefined();
    expect(await jobState('strict', 'skipped_1')).toBeNull();
  });
});
