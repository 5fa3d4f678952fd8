import type pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createHandler } from '../../services/core/handlers/index.ts';
import { createRegistry } from '../../services/core/metrics.ts';
import { registerPauseMetrics } from '../../services/core/pause/metrics.ts';
import {
  beginWithPauseFence,
  pausedAtBegin,
  pauseEndpoint,
  resumeEndpoint,
} from '../../services/core/pause/pause.ts';
import { applyJobs } from '../../services/worker/apply.ts';
import { fetchWaiting, silentLogger } from '../support/apply.ts';
import { createTestDatabase, createTestPool, type TestDatabase } from '../support/database.ts';
import { Claimer, waitFor, workerConfig } from '../support/worker-harness.ts';

// Pausing an endpoint: the fence makes `pause` wait for applies in flight and every apply after
// it see the pause; an apply that fetched before the pause hands its events back, charged
// nothing; the gauges and the audit trail say so.
let db: TestDatabase;
let claimer: Claimer;
const endpoints = { held: { handler: 'record' } };

beforeAll(async () => {
  db = await createTestDatabase();
  claimer = await Claimer.start(db.url, workerConfig(endpoints));
});

afterAll(async () => {
  await claimer?.stop();
  await db?.drop();
});

describe('pause and resume', () => {
  it('pause waits for an apply transaction in flight, and the next one sees the pause', async () => {
    const other = createTestPool(db.url, 'test-apply', 2);
    try {
      const inFlight = await other.connect();
      const begun = await inFlight.query(beginWithPauseFence('held'));
      expect(pausedAtBegin(begun as unknown as pg.QueryResult[])).toBe(false);
      let paused = false;
      const pausing = pauseEndpoint(db.pool, { endpoint: 'held', actor: 'alice', reason: 'deploying' }).then(
        (summary) => {
          paused = true;
          return summary;
        },
      );
      // The pause is queued behind the apply's share of the fence.
      await waitFor('pause to wait for the fence', async () => {
        const waiting = await db.pool.query(
          `SELECT 1 FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid
            WHERE l.locktype = 'advisory' AND NOT l.granted AND a.datname = current_database()`,
        );
        return (waiting.rowCount ?? 0) > 0;
      });
      expect(paused).toBe(false);
      await inFlight.query('COMMIT');
      inFlight.release();
      const summary = await pausing;
      expect(summary).toMatchObject({
        endpoint: 'held',
        changed: true,
        pause: { paused_by: 'alice', pause_reason: 'deploying' },
      });
      // An apply that begins now sees it.
      const next = await other.connect();
      const after = await next.query(beginWithPauseFence('held'));
      expect(pausedAtBegin(after as unknown as pg.QueryResult[])).toBe(true);
      await next.query('COMMIT');
      next.release();
    } finally {
      await other.end();
    }
    // Pausing again changes nothing (the first pause's who and why stay); resume lifts it once.
    expect(await pauseEndpoint(db.pool, { endpoint: 'held', actor: 'bob' })).toMatchObject({
      changed: false,
      pause: { paused_by: 'alice' },
    });
    const registry = createRegistry();
    registerPauseMetrics(registry, { db: db.pool, endpoints: ['held', 'free'], cacheMs: 0 });
    const text = await registry.metrics();
    expect(text).toMatch(/hookgate_endpoint_paused\{endpoint="held"\} 1/);
    expect(text).toMatch(/hookgate_endpoint_paused\{endpoint="free"\} 0/);
    expect(text).toMatch(/hookgate_endpoint_paused_seconds\{endpoint="held"\} [0-9.]+/);
    expect(await resumeEndpoint(db.pool, { endpoint: 'held', actor: 'carol' })).toMatchObject({
      changed: true,
      pause: { paused_by: 'alice' },
    });
    expect(await resumeEndpoint(db.pool, { endpoint: 'held', actor: 'carol' })).toMatchObject({
      changed: false,
    });
    expect(await registry.metrics()).toMatch(/hookgate_endpoint_paused\{endpoint="held"\} 0/);
    const audit = await db.pool.query<{ actor: string; command: string; count: string }>(
      `SELECT actor, command, count FROM hookgate.audit WHERE endpoint = 'held' ORDER BY id`,
    );
    expect(audit.rows.map((row) => `${row.actor} ${row.command} ${row.count}`)).toEqual([
      'alice pause 1',
      'bob pause 0',
      'carol resume 1',
      'carol resume 0',
    ]);
  });

  it('an apply of jobs fetched before the pause hands their events back unapplied, charged nothing', async () => {
    await claimer.claim('held', [{ eventId: 'h1' }, { eventId: 'h2' }]);
    const jobs = await fetchWaiting(claimer.boss, 'held');
    expect(jobs.flatMap((job) => job.eventIds).sort()).toEqual(['h1', 'h2']);
    await pauseEndpoint(db.pool, { endpoint: 'held', actor: 'alice' });
    const handler = await createHandler(
      'record',
      {},
      { endpoint: 'held', logger: silentLogger, configDir: '.' },
    );
    const policy = { maxAttempts: 3, retryDelaySeconds: 0, retryDelayMaxSeconds: 0 };
    const results = await applyJobs(
      { pool: db.pool, boss: claimer.boss, logger: silentLogger },
      'held',
      handler,
      jobs,
      policy,
    );
    expect(results.map((result) => result.outcome)).toEqual(['held', 'held']);
    const rows = await db.pool.query<{
      event_id: string;
      status: string;
      attempts: number;
      dispatch_job: string;
    }>(
      `SELECT event_id, status, attempts, dispatch_job::text AS dispatch_job FROM hookgate.inbox WHERE endpoint = 'held' ORDER BY event_id`,
    );
    for (const row of rows.rows) {
      expect(row).toMatchObject({ status: 'pending', attempts: 0 });
      // Carried by a new job now, not the one fetched (which is completed).
      expect(jobs.map((job) => job.id)).not.toContain(row.dispatch_job);
    }
    const fetchedJobs = await db.pool.query<{ state: string }>(
      `SELECT state::text AS state FROM pgboss.job WHERE id = ANY($1::uuid[])`,
      [jobs.map((job) => job.id)],
    );
    expect(fetchedJobs.rows.every((row) => row.state === 'completed')).toBe(true);
    // Resumed: the new jobs apply them once, as their first attempt.
    await resumeEndpoint(db.pool, { endpoint: 'held', actor: 'alice' });
    let again: Awaited<ReturnType<typeof fetchWaiting>> = [];
    await waitFor('the handed-back jobs to be due', async () => {
      again = await fetchWaiting(claimer.boss, 'held');
      return again.length > 0;
    });
    const applied = await applyJobs(
      { pool: db.pool, boss: claimer.boss, logger: silentLogger },
      'held',
      handler,
      again,
      policy,
    );
    expect(applied.map((result) => [result.eventId, result.outcome, result.attempts]).sort()).toEqual([
      ['h1', 'processed', 1],
      ['h2', 'processed', 1],
    ]);
  });
});
