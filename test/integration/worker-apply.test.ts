import { randomUUID } from 'node:crypto';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createPool } from '../../services/core/db/pool.ts';
import { createHandler } from '../../services/core/handlers/index.ts';
import { createLogger } from '../../services/core/logging.ts';
import { applyQueue, eventIdsOf } from '../../services/core/queue/names.ts';
import { applyJobs, type FetchedJob, type JobPolicy } from '../../services/worker/apply.ts';
import { createTestDatabase, type TestDatabase } from '../support/database.ts';
import {
  effectCounts,
  installEffects,
  rowLockWaiters,
  STALL_LOCK,
  stalledBackends,
} from '../support/worker-effects.ts';
import {
  Claimer,
  inboxRows,
  startTestWorker,
  statusCounts,
  waitFor,
  workerConfig,
} from '../support/worker-harness.ts';

const config = workerConfig({
  proj: { handler: 'project' },
  other: { handler: 'project' },
  rec: { handler: 'record' },
  batchy: { handler: 'project' },
  swallow: { handler: 'record' },
});

let db: TestDatabase;
let claimer: Claimer;

beforeAll(async () => {
  db = await createTestDatabase();
  await installEffects(db.pool);
  claimer = await Claimer.start(db.url, config);
});

afterAll(async () => {
  await claimer?.stop();
  await db?.drop();
});

const entity = (eventId: string, entityId: string, version: number) => ({
  eventId,
  entityType: 'thing',
  entityId,
  version,
  body: { id: entityId, version },
});

async function statusOf(endpoint: string, eventId: string) {
  const result = await db.pool.query(
    'SELECT status, attempts, last_error FROM hookgate.inbox WHERE endpoint = $1 AND event_id = $2',
    [endpoint, eventId],
  );
  return result.rows[0] as { status: string; attempts: number; last_error: string | null };
}

/** Jobs for an event that already has one (in the shape jobs had before batches): jobs the row does not name. */
async function extraJobs(endpoint: string, eventId: string, n: number): Promise<string[]> {
  const ids = Array.from({ length: n }, () => randomUUID());
  await claimer.boss.insert(
    applyQueue(endpoint),
    ids.map((id) => ({ id, data: { endpoint, eventIds: [eventId] } })),
  );
  return ids;
}

/** Fetches jobs one at a time, the way separate workers would each hold one. */
async function fetchEach(endpoint: string, n: number): Promise<FetchedJob[]> {
  const jobs: FetchedJob[] = [];
  for (let i = 0; i < n; i += 1) {
    const [job] = await claimer.boss.fetch(applyQueue(endpoint), { batchSize: 1 });
    if (!job) break;
    jobs.push({ id: job.id, retryCount: job.retryCount, eventIds: eventIdsOf(job.data) });
  }
  return jobs;
}

/** Every job waiting in the endpoint's queue, as one worker fetch. */
async function fetchAll(endpoint: string): Promise<FetchedJob[]> {
  return (await claimer.boss.fetch(applyQueue(endpoint), { batchSize: 100 })).map((job) => ({
    id: job.id,
    retryCount: job.retryCount,
    eventIds: eventIdsOf(job.data),
  }));
}

const logger = createLogger('silent');
const policy: JobPolicy = {
  maxAttempts: config.worker.retryLimit + 1,
  retryDelaySeconds: config.worker.retryDelay / 1000,
  retryDelayMaxSeconds: config.worker.retryDelayMax / 1000,
};

describe('worker apply', { timeout: 90_000 }, () => {
  it('applies a backlog with the record and project handlers and completes every job', async () => {
    const recIds = Array.from({ length: 30 }, (_, i) => `rec_${i}`);
    await claimer.claim(
      'rec',
      recIds.map((eventId) => ({ eventId })),
    );
    await claimer.claim('proj', [entity('p_1', 'e_basic', 1)]);
    const worker = await startTestWorker(db.url, config, { endpoints: ['rec', 'proj'] });
    try {
      await waitFor('all processed', async () => (await statusCounts(db.pool, 'rec')).processed === 30);
      await waitFor('projected', async () => (await statusOf('proj', 'p_1'))?.status === 'processed');
      const rows = await inboxRows(db.pool, 'rec');
      expect(rows.every((r) => r.attempts === 1 && r.last_error === null)).toBe(true);
      const state = await db.pool.query(
        `SELECT version, state FROM hookgate.entity_state WHERE endpoint = 'proj' AND entity_id = 'e_basic'`,
      );
      expect(state.rows[0]).toMatchObject({ version: '1', state: { id: 'e_basic', version: 1 } });
      const open = await db.pool.query(
        `SELECT count(*)::int AS n FROM pgboss.job WHERE name = $1 AND state <> 'completed'`,
        [applyQueue('rec')],
      );
      expect(open.rows[0].n).toBe(0);
    } finally {
      await worker.stop();
    }
  });

  it('same event twice (duplicate claim, then a redelivered job) has one effect', async () => {
    await claimer.claim('proj', [entity('twice', 'e_twice', 1)]);
    await claimer.claim('proj', [entity('twice', 'e_twice', 1)]);
    const worker = await startTestWorker(db.url, config, { endpoints: ['proj'] });
    try {
      await waitFor('processed', async () => (await statusOf('proj', 'twice'))?.status === 'processed');
      const [redelivery] = await extraJobs('proj', 'twice', 1);
      await waitFor('redelivered job completed', async () => {
        const job = await claimer.boss.getJobById(applyQueue('proj'), redelivery!);
        return job?.state === 'completed';
      });
      expect((await effectCounts(db.pool, 'proj')).get('twice')).toBe(1);
      expect(await statusOf('proj', 'twice')).toMatchObject({ status: 'processed', attempts: 1 });
    } finally {
      await worker.stop();
    }
  });

  it('same event from 8 concurrent connections: one row, one job, one effect', async () => {
    const eventId = 'eight';
    const claimers = await Promise.all(Array.from({ length: 8 }, () => Claimer.start(db.url, config)));
    try {
      await Promise.all(claimers.map((c) => c.claim('proj', [entity(eventId, 'e_eight', 1)])));
    } finally {
      await Promise.all(claimers.map((c) => c.stop()));
    }
    const jobs = await db.pool.query(
      `SELECT count(*)::int AS n FROM pgboss.job WHERE name = $1 AND data->'eventIds' ? $2`,
      [applyQueue('proj'), eventId],
    );
    expect(jobs.rows[0].n).toBe(1);
    // And 8 jobs naming it applied at once on 8 connections: its own, and 7 it does not name.
    await extraJobs('proj', eventId, 7);
    const fetched = await fetchEach('proj', 8);
    expect(fetched).toHaveLength(8);
    const pool = createPool({
      connectionString: db.url,
      max: 8,
      statementTimeoutMs: 30_000,
      connectTimeoutMs: 10_000,
      applicationName: 'test-eight',
    });
    try {
      const handler = await createHandler('project', {}, { endpoint: 'proj', logger, configDir: '.' });
      const results = await Promise.all(
        fetched.map((job) => applyJobs({ pool, boss: claimer.boss, logger }, 'proj', handler, [job], policy)),
      );
      const outcomes = results.flatMap((r) => r.map((e) => e.outcome)).sort();
      expect(outcomes.filter((o) => o === 'processed')).toHaveLength(1);
      // Whichever took the row lock after it: settled; the jobs the row does not name: not theirs.
      expect(outcomes.filter((o) => o === 'already_settled' || o === 'superseded')).toHaveLength(7);
    } finally {
      await pool.end();
    }
    expect((await effectCounts(db.pool, 'proj')).get(eventId)).toBe(1);
  });

  it('first attempt fails mid-apply while a later try of its job waits: the failure sends it again, the later try skips it, one effect', async () => {
    const eventId = 'fail_then_wait';
    await claimer.claim('proj', [entity(eventId, 'e_fw', 1)]);
    const [first] = await fetchEach('proj', 1);
    // The same job as pg-boss hands it to a second worker once the first one's try expired.
    const second: FetchedJob = { ...first!, retryCount: first!.retryCount + 1 };
    await db.pool.query('INSERT INTO public.stall_control VALUES ($1)', [eventId]);
    const holder = new pg.Client({ connectionString: db.url });
    await holder.connect();
    await holder.query('SELECT pg_advisory_lock($1)', [STALL_LOCK]);
    const failing = createPool({
      connectionString: db.url,
      max: 1,
      statementTimeoutMs: 30_000,
      connectTimeoutMs: 10_000,
      applicationName: 'test-failing',
    });
    const waiting = createPool({
      connectionString: db.url,
      max: 1,
      statementTimeoutMs: 30_000,
      connectTimeoutMs: 10_000,
      applicationName: 'test-waiting',
    });
    try {
      const handler = await createHandler('project', {}, { endpoint: 'proj', logger, configDir: '.' });
      const a = applyJobs({ pool: failing, boss: claimer.boss, logger }, 'proj', handler, [first!], policy);
      await waitFor('A stalled mid-apply', async () => (await stalledBackends(db.pool)).length === 1);
      const b = applyJobs({ pool: waiting, boss: claimer.boss, logger }, 'proj', handler, [second], policy);
      await waitFor(
        'B waiting on the row',
        async () => (await rowLockWaiters(db.pool, 'test-waiting')) === 1,
      );
      await holder.query('SELECT pg_advisory_unlock($1)', [STALL_LOCK]);
      const [ra, rb] = await Promise.all([a, b]);
      expect(ra[0]?.outcome).toBe('retry');
      // A's failure sent the event again in a new job: B's try is not the job the row names.
      expect(rb[0]?.outcome).toBe('superseded');
      await db.pool.query('DELETE FROM public.stall_control WHERE event_id = $1', [eventId]);
      const again = await waitFor('the new job ready', async () => {
        const jobs = await fetchAll('proj');
        return jobs.length > 0 ? jobs : null;
      });
      const [rc] = await applyJobs(
        { pool: waiting, boss: claimer.boss, logger },
        'proj',
        handler,
        again,
        policy,
      );
      expect(rc?.outcome).toBe('processed');
    } finally {
      await holder.end();
      await failing.end();
      await waiting.end();
    }
    expect((await effectCounts(db.pool, 'proj')).get(eventId)).toBe(1);
    const row = await statusOf('proj', eventId);
    expect(row.status).toBe('processed');
    expect(row.last_error).toMatch(/^sqlstate_P0001: injected failure/);
  });

  it('apply fails, then redelivery applies it; attempts=1 and last_error were recorded first', async () => {
    const eventId = 'fails_once';
    await db.pool.query('INSERT INTO public.fail_control VALUES ($1)', [eventId]);
    await claimer.claim('proj', [entity(eventId, 'e_fo', 1)]);
    const worker = await startTestWorker(db.url, config, { endpoints: ['proj'] });
    try {
      const failed = await waitFor('first attempt recorded', async () => {
        const row = await statusOf('proj', eventId);
        return row?.attempts === 1 && row.last_error ? row : null;
      });
      expect(failed.status).toBe('pending');
      expect(failed.last_error).toMatch(/injected failure for fails_once/);
      expect((await effectCounts(db.pool, 'proj')).get(eventId)).toBeUndefined();
      await db.pool.query('DELETE FROM public.fail_control WHERE event_id = $1', [eventId]);
      const done = await waitFor('redelivery applied', async () => {
        const row = await statusOf('proj', eventId);
        return row?.status === 'processed' ? row : null;
      });
      expect(done.attempts).toBe(2);
      expect((await effectCounts(db.pool, 'proj')).get(eventId)).toBe(1);
    } finally {
      await worker.stop();
    }
  });

  it('version guard: versions 1..N shuffled across concurrent workers end at N, older arrivals stale', async () => {
    const n = 40;
    const versions = Array.from({ length: n }, (_, i) => i + 1);
    for (let i = versions.length - 1; i > 0; i -= 1) {
      const j = Math.floor(Math.random() * (i + 1));
      [versions[i], versions[j]] = [versions[j]!, versions[i]!];
    }
    const small = workerConfig({ proj: { handler: 'project' } }, { batchSize: 3, concurrency: 2 });
    const workers = await Promise.all(
      Array.from({ length: 3 }, () => startTestWorker(db.url, small, { endpoints: ['proj'] })),
    );
    try {
      // Arrivals keep coming while workers apply.
      for (let i = 0; i < n; i += 5) {
        await claimer.claim(
          'proj',
          versions.slice(i, i + 5).map((v) => entity(`vg_${v}`, 'e_versioned', v)),
        );
      }
      await waitFor('all settled', async () => {
        const r = await db.pool.query(
          `SELECT count(*)::int AS n FROM hookgate.inbox WHERE endpoint = 'proj' AND event_id LIKE 'vg\\_%' AND status = 'pending'`,
        );
        return r.rows[0].n === 0;
      });
    } finally {
      await Promise.all(workers.map((w) => w.stop()));
    }
    const state = await db.pool.query(
      `SELECT version::int AS version, event_id FROM hookgate.entity_state WHERE endpoint = 'proj' AND entity_id = 'e_versioned'`,
    );
    expect(state.rows[0]).toEqual({ version: n, event_id: `vg_${n}` });
    const statuses = await db.pool.query<{ status: string; n: number }>(
      `SELECT status, count(*)::int AS n FROM hookgate.inbox WHERE endpoint = 'proj' AND event_id LIKE 'vg\\_%' GROUP BY status`,
    );
    const byStatus = Object.fromEntries(statuses.rows.map((r) => [r.status, r.n]));
    expect((byStatus.processed ?? 0) + (byStatus.stale ?? 0)).toBe(n);
    // Every effect moved the version forward: the applied versions are strictly increasing.
    const applied = await db.pool.query<{ version: string }>(
      `SELECT version FROM public.effects WHERE entity_id = 'e_versioned' ORDER BY seq`,
    );
    const seq = applied.rows.map((r) => Number(r.version));
    expect(seq).toEqual([...seq].sort((a, b) => a - b));
    expect(new Set(seq).size).toBe(seq.length);
    expect(seq.length).toBe(byStatus.processed);
    expect(seq.at(-1)).toBe(n);
  });

  it('the same event id on two endpoints is applied on both', async () => {
    await claimer.claim('proj', [entity('shared_id', 'e_shared', 1)]);
    await claimer.claim('other', [entity('shared_id', 'e_shared', 1)]);
    const worker = await startTestWorker(db.url, config, { endpoints: ['proj', 'other'] });
    try {
      await waitFor('both processed', async () => {
        const a = await statusOf('proj', 'shared_id');
        const b = await statusOf('other', 'shared_id');
        return a?.status === 'processed' && b?.status === 'processed';
      });
    } finally {
      await worker.stop();
    }
    expect((await effectCounts(db.pool, 'proj')).get('shared_id')).toBe(1);
    expect((await effectCounts(db.pool, 'other')).get('shared_id')).toBe(1);
  });

  it('a handler that swallows an SQL error fails alone; its neighbours still commit', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'hookgate-swallow-'));
    writeFileSync(
      join(dir, 'swallow.mjs'),
      `export const handler = {
        async apply({ tx }, event) {
          if (event.eventId === 'swallowed') {
            try { await tx.query('SELECT 1/0'); } catch {}
          }
          return 'processed';
        },
      };\n`,
    );
    await claimer.claim('swallow', [{ eventId: 'neighbour' }, { eventId: 'swallowed' }]);
    const jobs = await fetchAll('swallow');
    const handler = await createHandler(
      'module:swallow.mjs',
      {},
      { endpoint: 'swallow', logger, configDir: dir },
    );
    const pool = createPool({
      connectionString: db.url,
      max: 1,
      statementTimeoutMs: 30_000,
      connectTimeoutMs: 10_000,
      applicationName: 'test-swallow',
    });
    try {
      const result = await applyJobs({ pool, boss: claimer.boss, logger }, 'swallow', handler, jobs, policy);
      const outcomes = Object.fromEntries(result.map((e) => [e.eventId, e.outcome]));
      expect(outcomes).toEqual({ neighbour: 'processed', swallowed: 'retry' });
    } finally {
      await pool.end();
    }
    expect((await statusOf('swallow', 'neighbour')).status).toBe('processed');
    expect(await statusOf('swallow', 'swallowed')).toMatchObject({ status: 'pending', attempts: 1 });
  });

  it('one failing event in a batch: the batch reruns event by event, neighbours commit once, the failure is recorded', async () => {
    await claimer.claim('batchy', [
      entity('batch_a', 'b_a', 1),
      entity('batch_b', 'b_b', 1),
      entity('batch_c', 'b_c', 1),
    ]);
    await db.pool.query('INSERT INTO public.fail_control VALUES ($1)', ['batch_b']);
    const jobs = await fetchAll('batchy');
    // One claim, one job carrying its three events.
    expect(jobs.flatMap((job) => job.eventIds).sort()).toEqual(['batch_a', 'batch_b', 'batch_c']);
    const handler = await createHandler('project', {}, { endpoint: 'batchy', logger, configDir: '.' });
    const pool = createPool({
      connectionString: db.url,
      max: 1,
      statementTimeoutMs: 30_000,
      connectTimeoutMs: 10_000,
      applicationName: 'test-batch',
    });
    try {
      const result = await applyJobs({ pool, boss: claimer.boss, logger }, 'batchy', handler, jobs, policy);
      const outcomes = Object.fromEntries(result.map((e) => [e.eventId, e.outcome]));
      expect(outcomes).toEqual({ batch_a: 'processed', batch_b: 'retry', batch_c: 'processed' });
    } finally {
      await pool.end();
    }
    // batch_a ran before batch_b failed in the first pass; that pass was rolled back, so its
    // effect exists once, from the second pass.
    const effects = await effectCounts(db.pool, 'batchy');
    expect([effects.get('batch_a'), effects.get('batch_b'), effects.get('batch_c')]).toEqual([
      1,
      undefined,
      1,
    ]);
    expect((await statusOf('batchy', 'batch_a')).status).toBe('processed');
    const failed = await statusOf('batchy', 'batch_b');
    expect(failed).toMatchObject({ status: 'pending', attempts: 1 });
    expect(failed.last_error).toMatch(/^sqlstate_P0001: injected failure for batch_b/);
  });
});
