import { execFile } from 'node:child_process';
import { dirname } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createPool } from '../../services/core/db/pool.ts';
import { createLogger } from '../../services/core/logging.ts';
import { createGatewayMetrics, createRegistry } from '../../services/core/metrics.ts';
import { createBoss } from '../../services/core/queue/boss.ts';
import { applyQueue } from '../../services/core/queue/names.ts';
import { ensureQueues, retryPolicyFrom } from '../../services/core/queue/queues.ts';
import { startGateway } from '../../services/gateway/gateway.ts';
import { jobsNaming } from '../support/apply.ts';
import { createTestDatabase, type TestDatabase } from '../support/database.ts';
import { post, standardWebhook } from '../support/deliveries.ts';
import { effectCounts, installEffects } from '../support/worker-effects.ts';
import {
  CLI,
  Claimer,
  REPO_ROOT,
  startTestWorker,
  type TestWorker,
  waitFor,
  workerConfig,
  workerConfigDocument,
  writeConfigFile,
} from '../support/worker-harness.ts';

const run = promisify(execFile);
const SECRET = 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw';

const endpoints = {
  kids: { handler: 'project', options: { createOn: ['thing.created'] } },
  flaky: { handler: 'project' },
  orphaned: { handler: 'record' },
  direct: {
    handler: 'project',
    mode: 'sync',
    extract: { entityType: '/data/kind', entityId: '/data/id', version: '/data/version' },
  },
};
const document = workerConfigDocument(endpoints);
const config = workerConfig(endpoints);

let db: TestDatabase;
let claimer: Claimer;
let worker: TestWorker;
let configFile: string;

beforeAll(async () => {
  db = await createTestDatabase();
  await installEffects(db.pool);
  claimer = await Claimer.start(db.url, config);
  configFile = writeConfigFile(document);
  worker = await startTestWorker(db.url, config, {
    endpoints: ['kids', 'flaky'],
    configDir: dirname(configFile),
  });
});

afterAll(async () => {
  await worker?.stop();
  await claimer?.stop();
  await db?.drop();
});

async function row(endpoint: string, eventId: string) {
  const result = await db.pool.query(
    'SELECT status, attempts, last_error FROM hookgate.inbox WHERE endpoint = $1 AND event_id = $2',
    [endpoint, eventId],
  );
  return result.rows[0] as { status: string; attempts: number; last_error: string | null } | undefined;
}

/** The job the row names (the claim's, or the last one it was sent again in). */
async function jobOfRow(endpoint: string, eventId: string) {
  const result = await db.pool.query(
    `SELECT j.state::text AS state, j.id::text AS id FROM hookgate.inbox i
       LEFT JOIN pgboss.job j ON j.name = $3 AND j.id = i.dispatch_job
      WHERE i.endpoint = $1 AND i.event_id = $2`,
    [endpoint, eventId, applyQueue(endpoint)],
  );
  return result.rows[0] as { state: string | null; id: string | null } | undefined;
}

async function cli(...args: string[]): Promise<string> {
  const { stdout } = await run(process.execPath, [CLI, ...args], {
    cwd: REPO_ROOT,
    env: { ...process.env, DATABASE_URL: db.url, LOG_LEVEL: 'warn' },
  });
  return stdout;
}

describe('retries, parking and dead letters', { timeout: 120_000 }, () => {
  it('EntityNotYetKnown until the limit is parked; requeued after its parent arrives it is processed', async () => {
    await claimer.claim('kids', [
      { eventId: 'upd_2', eventType: 'thing.updated', entityType: 'thing', entityId: 'k1', version: 2 },
    ]);
    const parked = await waitFor(
      'parked',
      async () => {
        const r = await row('kids', 'upd_2');
        return r?.status === 'parked' ? r : null;
      },
      60_000,
    );
    expect(parked.attempts).toBe(config.worker.retryLimit + 1);
    expect(parked.last_error).toMatch(/^entity_not_yet_known: thing k1 has no state yet/);

    await claimer.claim('kids', [
      { eventId: 'create_1', eventType: 'thing.created', entityType: 'thing', entityId: 'k1', version: 1 },
    ]);
    await waitFor('parent processed', async () => (await row('kids', 'create_1'))?.status === 'processed');

    const listed = await cli('events', 'list', '--endpoint', 'kids', '--status', 'parked', '--json');
    expect(JSON.parse(listed).map((row: { event_id: string }) => row.event_id)).toEqual(['upd_2']);
    const stats = JSON.parse(await cli('stats', '--json', '--config', configFile));
    expect(stats.endpoints).toContainEqual(expect.objectContaining({ endpoint: 'kids', parked: 1 }));

    const out = JSON.parse(
      await cli('requeue', '--endpoint', 'kids', '--status', 'parked', '--json', '--config', configFile),
    );
    expect(out).toMatchObject({ endpoint: 'kids', requeued: 1, event_ids: ['upd_2'] });
    const done = await waitFor('requeued event processed', async () => {
      const r = await row('kids', 'upd_2');
      return r?.status === 'processed' ? r : null;
    });
    // Attempts keep counting across the requeue.
    expect(done.attempts).toBe(config.worker.retryLimit + 2);
    const state = await db.pool.query(
      `SELECT version::int AS version FROM hookgate.entity_state WHERE endpoint = 'kids' AND entity_id = 'k1'`,
    );
    expect(state.rows[0].version).toBe(2);
    expect((await effectCounts(db.pool, 'kids')).get('upd_2')).toBe(1);
  });

  it('an event failing past its limit is dead, keeps its error, and requeue gives it a fresh job', async () => {
    await db.pool.query('INSERT INTO public.fail_control VALUES ($1)', ['doomed']);
    await claimer.claim('flaky', [{ eventId: 'doomed', entityType: 'thing', entityId: 'd1', version: 1 }]);
    const dead = await waitFor('dead', async () => {
      const r = await row('flaky', 'doomed');
      return r?.status === 'dead' ? r : null;
    });
    expect(dead.attempts).toBe(config.worker.retryLimit + 1);
    expect(dead.last_error).toMatch(/^sqlstate_P0001: injected failure for doomed/);
    // The event's attempts ended on its row; the job that carried the last one is done.
    expect((await jobOfRow('flaky', 'doomed'))?.state).toBe('completed');

    await db.pool.query('DELETE FROM public.fail_control WHERE event_id = $1', ['doomed']);
    const out = JSON.parse(
      await cli('requeue', '--endpoint', 'flaky', '--event-id', 'doomed', '--json', '--config', configFile),
    );
    expect(out.requeued).toBe(1);
    await waitFor(
      'processed after requeue',
      async () => (await row('flaky', 'doomed'))?.status === 'processed',
    );
    expect((await effectCounts(db.pool, 'flaky')).get('doomed')).toBe(1);
  });

  it('requeue --orphans re-sends a job for a pending row whose job is gone, and leaves live jobs alone', async () => {
    await claimer.claim('orphaned', [{ eventId: 'lost_job' }]);
    await claimer.claim('orphaned', [{ eventId: 'live_job' }]);
    const lost = await jobOfRow('orphaned', 'lost_job');
    await claimer.boss.deleteJob(applyQueue('orphaned'), lost!.id!);
    const out = JSON.parse(
      await cli('requeue', '--endpoint', 'orphaned', '--orphans', '--json', '--config', configFile),
    );
    expect(out).toMatchObject({ requeued: 1, event_ids: ['lost_job'] });
    const orphanWorker = await startTestWorker(db.url, config, {
      endpoints: ['orphaned'],
      configDir: dirname(configFile),
    });
    try {
      for (const eventId of ['lost_job', 'live_job']) {
        await waitFor(
          `${eventId} processed`,
          async () => (await row('orphaned', eventId))?.status === 'processed',
        );
      }
    } finally {
      await orphanWorker.stop();
    }
  });

  it('requeue validates its input', async () => {
    await expect(
      cli('requeue', '--endpoint', 'kids', '--status', 'pending', '--config', configFile),
    ).rejects.toThrow(/status/);
    await expect(cli('requeue', '--endpoint', 'nope', '--config', configFile)).rejects.toThrow(
      /endpoint_unknown/,
    );
  });

  it('sync mode applies inside the request: visible on 200, and a failing apply is a 5xx that stores nothing', async () => {
    const pool = createPool({
      connectionString: db.url,
      max: 4,
      statementTimeoutMs: 30_000,
      connectTimeoutMs: 5_000,
      applicationName: 'test-sync-gateway',
    });
    const boss = createBoss({
      connectionString: db.url,
      max: 2,
      supervise: false,
      applicationName: 'test-sync',
    });
    boss.on('error', () => {});
    await boss.start();
    await ensureQueues(boss, Object.keys(config.endpoints), retryPolicyFrom(config.worker));
    const gateway = await startGateway({
      config,
      pool,
      boss,
      logger: createLogger('silent'),
      metrics: createGatewayMetrics(createRegistry()),
      port: 0,
      host: '127.0.0.1',
    });
    const url = `http://127.0.0.1:${gateway.port}/webhooks/direct`;
    try {
      const ok = standardWebhook(SECRET, {
        eventId: 'sync_ok',
        data: { kind: 'thing', id: 's1', version: 3 },
      });
      const reply = await post(url, ok);
      expect(reply.json).toMatchObject({ status: 'accepted' });
      expect(reply.status).toBe(200);
      // No worker involved: the state is there when the 200 arrives.
      expect(await row('direct', 'sync_ok')).toMatchObject({ status: 'processed', attempts: 1 });
      const state = await db.pool.query(
        `SELECT version::int AS version FROM hookgate.entity_state WHERE endpoint = 'direct' AND entity_id = 's1'`,
      );
      expect(state.rows[0].version).toBe(3);
      // Applied in its claim: no job was ever needed.
      expect(await jobOfRow('direct', 'sync_ok')).toEqual({ state: null, id: null });
      expect(await jobsNaming(db.pool, ['sync_ok'])).toBe(0);
      expect((await post(url, ok)).json.status).toBe('duplicate');

      await db.pool.query('INSERT INTO public.fail_control VALUES ($1)', ['sync_bad']);
      const bad = standardWebhook(SECRET, {
        eventId: 'sync_bad',
        data: { kind: 'thing', id: 's2', version: 1 },
      });
      const refused = await post(url, bad);
      expect(refused.status).toBeGreaterThanOrEqual(500);
      expect(await row('direct', 'sync_bad')).toBeUndefined();
      expect(await jobsNaming(db.pool, ['sync_bad'])).toBe(0);
      // The provider's retry succeeds once the cause is gone.
      await db.pool.query('DELETE FROM public.fail_control WHERE event_id = $1', ['sync_bad']);
      expect((await post(url, bad)).status).toBe(200);
      expect(await row('direct', 'sync_bad')).toMatchObject({ status: 'processed' });
    } finally {
      await gateway.stop();
      await boss.stop({ graceful: false, close: true });
      await pool.end();
    }
  });
});
