import type { PgBoss } from 'pg-boss';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEFAULT_DEDUPE_HORIZON_MS } from '../../services/core/config/dedupe-schema.ts';
import { applyQueue } from '../../services/core/queue/names.ts';
import { prune } from '../../services/core/retention/prune.ts';
import { jobsNaming, startBoss } from '../support/apply.ts';
import { createTestDatabase, type TestDatabase } from '../support/database.ts';
import { post, standardWebhook } from '../support/deliveries.ts';
import { startTestGateway, type TestGateway } from '../support/gateway.ts';
import { startTestWorker, type TestWorker, waitFor, workerConfig } from '../support/worker-harness.ts';

// A redelivery at any time — before or after the inbox row is pruned, while pg-boss still keeps
// the first delivery's finished job or after it deleted it, even while that job is still running
// — is either a duplicate (no job) or a new event with a job of its own, applied once; never
// accepted and left without a job, and never answered 503 for a job of another time.

const SECRET = 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw';
const DAY = 86_400_000;

const config = workerConfig({
  redo: { handler: 'record' },
  // Not served by the long-running worker: the test holds its job active by hand.
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
  // A queue whose policy lets only one job wait at a time: pg-boss skips a second insert.
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
    `SELECT status, attempts, dispatch_job::text AS dispatch_job FROM hookgate.inbox WHERE endpoint = $1 AND event_id = $2`,
    [endpoint, eventId],
  );
  return rows[0] as { status: string; attempts: number; dispatch_job: string | null } | undefined;
}

async function jobState(endpoint: string, id: string | null | undefined): Promise<string | null> {
  if (!id) return null;
  return (await boss.getJobById(applyQueue(endpoint), id))?.state ?? null;
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
    actor: 'test',
    inboxOlderThanMs: 30 * DAY,
    dedupe: { now: new Date(), horizonMs: DEFAULT_DEDUPE_HORIZON_MS },
    deliveriesOlderThanMs: 90 * DAY,
    chunk: 100,
  });
  expect(report.inboxRows).toBe(1);
  expect(await row(endpoint, eventId)).toBeUndefined();
}

const deliver = (endpoint: string, eventId: string) =>
  post(`${gateway.url}/webhooks/${endpoint}`, standardWebhook(SECRET, { eventId }));

describe('redelivery of an event', { timeout: 60_000 }, () => {
  it('before prune: a duplicate, with no job, and the first job left as it is', async () => {
    expect((await deliver('redo', 'dup_1')).json.status).toBe('accepted');
    await processed('redo', 'dup_1');
    const first = (await row('redo', 'dup_1'))!.dispatch_job;
    expect(await jobState('redo', first)).toBe('completed');
    expect((await deliver('redo', 'dup_1')).json.status).toBe('duplicate');
    expect(await jobsNaming(db.pool, ['dup_1'])).toBe(1);
    expect((await row('redo', 'dup_1'))!.dispatch_job).toBe(first);
  });

  it('after prune, while pg-boss still keeps the finished job: a new row, a job of its own, applied once', async () => {
    expect((await deliver('redo', 'pruned_1')).json.status).toBe('accepted');
    await processed('redo', 'pruned_1');
    const first = (await row('redo', 'pruned_1'))!.dispatch_job;
    await pruneRow('redo', 'pruned_1');
    expect(await jobState('redo', first)).toBe('completed');
    expect((await deliver('redo', 'pruned_1')).json.status).toBe('accepted');
    await processed('redo', 'pruned_1');
    const second = await row('redo', 'pruned_1');
    expect(second).toMatchObject({ status: 'processed', attempts: 1 });
    expect(second!.dispatch_job).not.toBe(first);
    expect(await jobState('redo', second!.dispatch_job)).toBe('completed');
  });

  it('after prune, once pg-boss has deleted the job too: accepted and applied', async () => {
    expect((await deliver('redo', 'pruned_2')).json.status).toBe('accepted');
    await processed('redo', 'pruned_2');
    await boss.deleteJob(applyQueue('redo'), (await row('redo', 'pruned_2'))!.dispatch_job!);
    await pruneRow('redo', 'pruned_2');
    expect((await deliver('redo', 'pruned_2')).json.status).toBe('accepted');
    await processed('redo', 'pruned_2');
  });

  it('after prune, while the first job is still running: accepted at once (no 503); the old job skips the new row', async () => {
    expect((await deliver('idle', 'running_1')).json.status).toBe('accepted');
    const [old] = await boss.fetch(applyQueue('idle'), { batchSize: 1 });
    expect((await boss.getJobById(applyQueue('idle'), old!.id))?.state).toBe('active');
    // The row goes (a prune of an event whose job never finished is an operator's doing here), and
    // its key with it (as the keys' retention does once the dedupe horizon has passed).
    await db.pool.query(`DELETE FROM hookgate.inbox WHERE endpoint = 'idle' AND event_id = 'running_1'`);
    await db.pool.query(`DELETE FROM hookgate.inbox_keys WHERE endpoint = 'idle' AND event_id = 'running_1'`);
    const reply = await deliver('idle', 'running_1');
    expect(reply.status).toBe(200);
    expect(reply.json.status).toBe('accepted');
    const fresh = await row('idle', 'running_1');
    expect(fresh!.dispatch_job).not.toBe(old!.id);
    expect(await jobState('idle', fresh!.dispatch_job)).toBe('created');
    // A worker for `idle` applies it once: its own job; the old one finds a row it does not carry.
    const idleWorker = await startTestWorker(db.url, config, { endpoints: ['idle'] });
    try {
      await boss.complete(applyQueue('idle'), old!.id);
      await processed('idle', 'running_1');
    } finally {
      await idleWorker.stop();
    }
    expect(await row('idle', 'running_1')).toMatchObject({ status: 'processed', attempts: 1 });
  });

  it('a job pg-boss will not create is never accepted silently', async () => {
    // `short` lets one job wait per queue: the second claim's job is refused by pg-boss.
    expect((await deliver('strict', 'first')).json.status).toBe('accepted');
    const refused = await deliver('strict', 'second');
    expect(refused.status).toBe(503);
    expect(await row('strict', 'second')).toBeUndefined();
  });
});
