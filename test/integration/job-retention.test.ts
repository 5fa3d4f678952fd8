import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEFAULT_DEDUPE_HORIZON_MS } from '../../services/core/config/dedupe-schema.ts';
import { parseConfig } from '../../services/core/config/load.ts';
import { applyQueue } from '../../services/core/queue/names.ts';
import { prune } from '../../services/core/retention/prune.ts';
import { createTestDatabase, type TestDatabase } from '../support/database.ts';
import { post, standardWebhook } from '../support/deliveries.ts';
import { startTestGateway, type TestGateway } from '../support/gateway.ts';
import {
  Claimer,
  startTestWorker,
  type TestWorker,
  waitFor,
  workerConfigDocument,
} from '../support/worker-harness.ts';

// Finished jobs are deleted by pg-boss's own maintenance (run by the supervising worker) soon
// after they finish, with retention windows shortened to a second here. The inbox row stays.
// Whatever the job's state, a redelivery is a duplicate while the row exists and is applied once
// the row is pruned (in a job of its own).

const SECRET = 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw';
const DAY = 86_400_000;

const config = parseConfig(
  workerConfigDocument(
    {
      redo: { handler: 'record' },
      kids: { handler: 'project', options: { createOn: ['thing.created'] } },
    },
    { completedJobRetention: '1s', maintenanceInterval: '1s' },
  ),
  {},
);

let db: TestDatabase;
let gateway: TestGateway;
let worker: TestWorker;
let claimer: Claimer;

beforeAll(async () => {
  db = await createTestDatabase();
  gateway = await startTestGateway(db.url, config);
  worker = await startTestWorker(db.url, config);
  claimer = await Claimer.start(db.url, config);
});

afterAll(async () => {
  await worker?.stop();
  await claimer?.stop();
  await gateway?.stop();
  await db?.drop();
});

async function row(endpoint: string, eventId: string) {
  const { rows } = await db.pool.query(
    'SELECT status, attempts FROM hookgate.inbox WHERE endpoint = $1 AND event_id = $2',
    [endpoint, eventId],
  );
  return rows[0] as { status: string; attempts: number } | undefined;
}

/** The job that carries (or last carried) an event: the one its row names. */
async function jobOfRow(endpoint: string, eventId: string): Promise<string> {
  const { rows } = await db.pool.query(
    'SELECT dispatch_job::text AS id FROM hookgate.inbox WHERE endpoint = $1 AND event_id = $2',
    [endpoint, eventId],
  );
  return (rows[0] as { id: string }).id;
}

/** Every job (of any state) that names the event. */
async function jobsNaming(endpoint: string, eventId: string): Promise<number> {
  const { rows } = await db.pool.query(
    `SELECT count(*)::int AS n FROM pgboss.job WHERE name = $1 AND data->'eventIds' ? $2`,
    [applyQueue(endpoint), eventId],
  );
  return (rows[0] as { n: number }).n;
}

/** The job under an id, whatever its queue (null once deleted). */
async function job(id: string) {
  const { rows } = await db.pool.query(
    'SELECT name, state::text AS state, deletion_seconds FROM pgboss.job WHERE id = $1',
    [id],
  );
  return (rows[0] as { name: string; state: string; deletion_seconds: number } | undefined) ?? null;
}

const processed = (endpoint: string, eventId: string) =>
  waitFor(
    `${endpoint}/${eventId} processed`,
    async () => (await row(endpoint, eventId))?.status === 'processed',
  );

const gone = (id: string, what: string) =>
  waitFor(`${what} deleted`, async () => (await job(id)) === null, 30_000);

const deliver = (eventId: string) =>
  post(`${gateway.url}/webhooks/redo`, standardWebhook(SECRET, { eventId }));

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
}

describe('finished jobs are deleted soon', { timeout: 90_000 }, () => {
  it('the queues carry the configured retention', async () => {
    const { rows } = await db.pool.query(
      `SELECT name, deletion_seconds, retention_seconds FROM pgboss.queue WHERE name LIKE 'hookgate.%' ORDER BY name COLLATE "C"`,
    );
    expect(rows).toEqual([
      { name: applyQueue('kids'), deletion_seconds: 1, retention_seconds: 90 * 86_400 },
      { name: applyQueue('redo'), deletion_seconds: 1, retention_seconds: 90 * 86_400 },
    ]);
  });

  it('a completed apply job is deleted by maintenance; a redelivery then is a duplicate and creates no job', async () => {
    expect((await deliver('soon_1')).json.status).toBe('accepted');
    await processed('redo', 'soon_1');
    await gone(await jobOfRow('redo', 'soon_1'), 'the completed apply job');

    const reply = await deliver('soon_1');
    expect(reply.status).toBe(200);
    expect(reply.json.status).toBe('duplicate');
    expect(await jobsNaming('redo', 'soon_1')).toBe(0);
    expect(await row('redo', 'soon_1')).toMatchObject({ status: 'processed', attempts: 1 });
  });

  it('once the row is pruned as well, a redelivery is accepted, applied, and its new job goes the same way', async () => {
    expect((await deliver('soon_2')).json.status).toBe('accepted');
    await processed('redo', 'soon_2');
    await gone(await jobOfRow('redo', 'soon_2'), 'the completed apply job');
    await pruneRow('redo', 'soon_2');
    expect(await row('redo', 'soon_2')).toBeUndefined();

    expect((await deliver('soon_2')).json.status).toBe('accepted');
    await processed('redo', 'soon_2');
    expect(await row('redo', 'soon_2')).toMatchObject({ status: 'processed', attempts: 1 });
    await gone(await jobOfRow('redo', 'soon_2'), 'the second completed apply job');
    expect((await deliver('soon_2')).json.status).toBe('duplicate');
  });

  it('an event that ends parked: every job that carried it is completed and deleted, the row stays parked', async () => {
    await claimer.claim('kids', [
      { eventId: 'early_1', eventType: 'thing.updated', entityType: 'thing', entityId: 'k1', version: 2 },
    ]);
    await waitFor('early_1 parked', async () => (await row('kids', 'early_1'))?.status === 'parked', 30_000);
    // The premise: it was tried more than once (each retry in a job of its own).
    expect((await row('kids', 'early_1'))?.attempts).toBeGreaterThan(1);
    await waitFor('its jobs deleted', async () => (await jobsNaming('kids', 'early_1')) === 0, 30_000);
    expect(await row('kids', 'early_1')).toMatchObject({ status: 'parked' });
  });
});
