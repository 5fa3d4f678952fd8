import pg from 'pg';
import { describe, expect, it } from 'vitest';
import { parseConfig } from '../../services/core/config/load.ts';
import { applyQueue } from '../../services/core/queue/names.ts';
import { ensureQueues, retryPolicyFrom } from '../../services/core/queue/queues.ts';
import { effectCounts, STALL_LOCK, stalledBackends } from '../support/worker-effects.ts';
import {
  statusCounts,
  type WorkerProcess,
  waitFor,
  workerConfig,
  workerConfigDocument,
  writeConfigFile,
} from '../support/worker-harness.ts';
import { useWorkerStack } from '../support/worker-stack.ts';

const endpoints = {
  bulk: { handler: 'project' },
  crash: { handler: 'project' },
  loop: { handler: 'project' },
  lease: { handler: 'project' },
  poison: { handler: 'project' },
};
const worker = { batchSize: 10, concurrency: 2 };
const config = workerConfig(endpoints, worker);

let holder: pg.Client;

const stack = useWorkerStack({
  endpoints,
  worker,
  effects: true,
  // A killed worker's backend may be waiting on a lock and never write to its dead socket; this
  // makes PostgreSQL notice the closed connection within 100 ms and roll the transaction back.
  setup: async (db) => {
    await db.pool.query(`ALTER DATABASE ${db.name} SET client_connection_check_interval = '100ms'`);
    holder = new pg.Client({ connectionString: db.url });
    await holder.connect();
    stack.defer(() => holder.end());
  },
  stopWorkers: 'afterEach',
  stopSignal: 'SIGKILL',
});
const spawnWorker = () => stack.spawnWorker();
const kill = (proc: WorkerProcess) => stack.kill(proc);

const entity = (eventId: string, entityId: string, version = 1) => ({
  eventId,
  entityType: 'thing',
  entityId,
  version,
});

async function row(endpoint: string, eventId: string) {
  const result = await stack.db.pool.query(
    'SELECT status, attempts, last_error FROM hookgate.inbox WHERE endpoint = $1 AND event_id = $2',
    [endpoint, eventId],
  );
  return result.rows[0] as { status: string; attempts: number; last_error: string | null } | undefined;
}

/** A worker connection holding a transaction id: an apply transaction that has locked or written rows. */
async function openApplyTransaction(): Promise<{ pid: number; xid: string } | null> {
  const { rows } = await stack.db.pool.query<{ pid: number; xid: string }>(
    `SELECT pid, backend_xid::text AS xid FROM pg_stat_activity
      WHERE datname = current_database() AND application_name = 'hookgate-worker'
        AND backend_xid IS NOT NULL
      LIMIT 1`,
  );
  return rows[0] ?? null;
}

/** `committed` or `aborted` once the transaction has ended, else null (still in progress). */
async function transactionEnding(xid: string): Promise<string | null> {
  // pg_stat_activity gives the 32-bit xid; pg_xact_status wants it with its epoch.
  const { rows } = await stack.db.pool.query<{ status: string | null }>(
    `SELECT pg_xact_status(((pg_snapshot_xmax(pg_current_snapshot())::text::bigint >> 32 << 32)
                            | $1::bigint)::text::xid8) AS status`,
    [xid],
  );
  const status = rows[0]?.status ?? null;
  return status === 'in progress' ? null : status;
}

/** The job the row names, as pg-boss holds it. */
async function jobOfRow(endpoint: string, eventId: string) {
  const { rows } = await stack.db.pool.query(
    `SELECT j.state::text AS state, j.retry_count AS "retryCount" FROM hookgate.inbox i
       JOIN pgboss.job j ON j.name = $3 AND j.id = i.dispatch_job
      WHERE i.endpoint = $1 AND i.event_id = $2`,
    [endpoint, eventId, applyQueue(endpoint)],
  );
  return rows[0] as { state: string; retryCount: number } | undefined;
}

async function stall(eventId: string): Promise<void> {
  await stack.db.pool.query('INSERT INTO public.stall_control VALUES ($1)', [eventId]);
  await holder.query('SELECT pg_advisory_lock($1)', [STALL_LOCK]);
}

async function unstall(eventId: string): Promise<void> {
  await stack.db.pool.query('DELETE FROM public.stall_control WHERE event_id = $1', [eventId]);
  await holder.query('SELECT pg_advisory_unlock($1)', [STALL_LOCK]);
}

describe('worker processes', { timeout: 300_000 }, () => {
  it('500 events across 4 worker processes: exactly 500 applied, none pending, one attempt each', async () => {
    // The shipped expiry (not the file's 3 s, which the stalled-worker test below needs): "one
    // attempt each" is about workers sharing a queue, and a busy machine may take longer than 3 s
    // over a batch without any worker being lost.
    const shipped = workerConfigDocument(endpoints, { ...worker, expireIn: '2m' });
    const shippedExpiry = writeConfigFile(shipped);
    // Jobs take their queue's expiry when claimed: the queue has it before the first claim.
    await ensureQueues(stack.claimer.boss, ['bulk'], retryPolicyFrom(parseConfig(shipped, {}).worker));
    const procs = Array.from({ length: 4 }, () => stack.spawnWorker({ configFile: shippedExpiry }));
    const events = Array.from({ length: 500 }, (_, i) => entity(`bulk_${i}`, `b_${i}`));
    for (let i = 0; i < events.length; i += 50) await stack.claimer.claim('bulk', events.slice(i, i + 50));
    await waitFor(
      'all applied',
      async () => (await statusCounts(stack.db.pool, 'bulk')).processed === 500,
      240_000,
    );
    const counts = await statusCounts(stack.db.pool, 'bulk');
    expect(counts).toEqual({ processed: 500 });
    const attempts = await stack.db.pool.query(
      `SELECT attempts, count(*)::int AS n FROM hookgate.inbox WHERE endpoint = 'bulk' GROUP BY attempts`,
    );
    expect(attempts.rows).toEqual([{ attempts: 1, n: 500 }]);
    const effects = await effectCounts(stack.db.pool, 'bulk');
    expect(effects.size).toBe(500);
    expect([...effects.values()].every((n) => n === 1)).toBe(true);
    // A job per worker batch of each claim (ten claims of 50, in jobs of worker.batchSize), each
    // completed in the transaction that applied its events (on a busy machine a heartbeat may
    // lapse and a job be tried again, finding its events settled: it completes then).
    const jobStates = async () =>
      (
        await stack.db.pool.query(
          `SELECT state::text AS state, count(*)::int AS n FROM pgboss.job WHERE name = $1 GROUP BY state`,
          [applyQueue('bulk')],
        )
      ).rows;
    await waitFor(
      'every job completed',
      async () => (await jobStates()).every((r) => r.state === 'completed'),
      30_000,
    ).catch(() => {});
    expect(await jobStates()).toEqual([
      { state: 'completed', n: 10 * Math.ceil(50 / config.worker.batchSize) },
    ]);
    expect(procs.every((p) => p.child.exitCode === null)).toBe(true);
  });

  it('SIGKILL after the business write, before COMMIT: after restart exactly one effect', async () => {
    await stall('victim');
    await stack.claimer.claim('crash', [entity('victim', 'c_1')]);
    const first = spawnWorker();
    await waitFor(
      'worker stalled inside its business write',
      async () => (await stalledBackends(stack.db.pool)).length === 1,
    );
    await kill(first);
    await waitFor(
      'killed transaction rolled back',
      async () => (await stalledBackends(stack.db.pool)).length === 0,
    );
    expect((await effectCounts(stack.db.pool, 'crash')).get('victim')).toBeUndefined();
    expect((await row('crash', 'victim'))?.status).toBe('pending');
    await unstall('victim');

    spawnWorker();
    const done = await waitFor('applied after restart', async () => {
      const r = await row('crash', 'victim');
      return r?.status === 'processed' ? r : null;
    });
    // The killed attempt was counted (fetch commits before the work).
    expect(done.attempts).toBe(2);
    expect((await effectCounts(stack.db.pool, 'crash')).get('victim')).toBe(1);
  });

  it('workers SIGKILLed mid-stream, inside open apply transactions, never double-apply', async () => {
    const total = 300;
    const small = { batchSize: 5, concurrency: 2 };
    const smallFile = writeConfigFile(workerConfigDocument(endpoints, small));
    const events = Array.from({ length: total }, (_, i) => entity(`loop_${i}`, `l_${i}`));
    for (let i = 0; i < events.length; i += 100) await stack.claimer.claim('loop', events.slice(i, i + 100));
    // How each killed worker's observed write transaction ended: `aborted` means the kill hit it
    // before COMMIT; `committed` means COMMIT won the race.
    const endings: string[] = [];
    for (let round = 0; round < 4; round += 1) {
      const before = (await statusCounts(stack.db.pool, 'loop')).processed ?? 0;
      if (before >= total - 20) break;
      const proc = stack.spawnWorker({ configFile: smallFile });
      await waitFor(
        'some progress',
        async () => ((await statusCounts(stack.db.pool, 'loop')).processed ?? 0) >= before + 10,
        240_000,
        10,
      );
      const open = await waitFor(
        'a worker inside a write transaction',
        () => openApplyTransaction(),
        60_000,
        2,
      );
      await kill(proc);
      endings.push(await waitFor('its transaction to end', () => transactionEnding(open.xid), 60_000));
    }
    // The premise: at least one kill landed inside an open apply transaction.
    expect(endings).toContain('aborted');
    const finisher = spawnWorker();
    await waitFor(
      'all applied',
      async () => (await statusCounts(stack.db.pool, 'loop')).processed === total,
      240_000,
    );
    expect(finisher.child.exitCode).toBeNull();
    const effects = await effectCounts(stack.db.pool, 'loop');
    expect(effects.size).toBe(total);
    expect([...effects.entries()].filter(([, n]) => n !== 1)).toEqual([]);
  });

  it('a worker stalled past its expiry while another takes the job: one effect', async () => {
    await stall('leased');
    await stack.claimer.claim('lease', [entity('leased', 'le_1')]);
    const stalled = spawnWorker();
    await waitFor('first worker stalled', async () => (await stalledBackends(stack.db.pool)).length === 1);
    // Its job expires (expireIn 3s) and is retried; a second worker takes it and waits on the row.
    spawnWorker();
    await waitFor(
      'second worker holds the retried job',
      async () => {
        const job = await jobOfRow('lease', 'leased');
        return job?.state === 'active' && job.retryCount === 1;
      },
      240_000,
    );
    await waitFor('second worker waits for the row', async () => {
      const r = await stack.db.pool.query(
        `SELECT count(*)::int AS n FROM pg_stat_activity
          WHERE datname = $1 AND wait_event_type = 'Lock' AND wait_event <> 'advisory'`,
        [stack.db.name],
      );
      return r.rows[0].n >= 1;
    });
    await unstall('leased');
    await waitFor('processed', async () => (await row('lease', 'leased'))?.status === 'processed');
    await waitFor('retried job completed by the second worker', async () => {
      const job = await jobOfRow('lease', 'leased');
      return job?.state === 'completed';
    });
    expect((await effectCounts(stack.db.pool, 'lease')).get('leased')).toBe(1);
    expect(stalled.child.exitCode).toBeNull();
  });

  it('a poison event that kills the worker every time stops at its limit as dead', async () => {
    await stall('poison_pill');
    await stack.claimer.claim('poison', [entity('poison_pill', 'pp_1')]);
    // The attempt each kill interrupted, read from pg-boss while its worker is stalled on the
    // poison: every claim bumps retry_count, so distinct values are distinct attempts.
    const killed: { state: string | undefined; retryCount: number | undefined }[] = [];
    try {
      for (let i = 0; i < config.worker.retryLimit + 3; i += 1) {
        const proc = spawnWorker();
        // Either the worker reaches the poison (and is killed, as a crashing handler would be),
        // or the event has gone dead and there is nothing left to reach.
        const reached = await waitFor(
          'poison reached or dead',
          async () => {
            if ((await stalledBackends(stack.db.pool)).length > 0) return 'stalled';
            if ((await row('poison', 'poison_pill'))?.status === 'dead') return 'dead';
            return null;
          },
          240_000,
        );
        if (reached === 'dead') break;
        const job = await jobOfRow('poison', 'poison_pill');
        await kill(proc);
        killed.push({ state: job?.state, retryCount: job?.retryCount });
        await waitFor('rolled back', async () => (await stalledBackends(stack.db.pool)).length === 0);
      }
    } finally {
      await unstall('poison_pill');
    }
    // Each of the retryLimit + 1 attempts reached the poison and was killed, exactly once each.
    expect(killed).toEqual(
      Array.from({ length: config.worker.retryLimit + 1 }, (_, n) => ({ state: 'active', retryCount: n })),
    );
    // And no attempt after the last: the job failed (terminal) without another claim, and the
    // sweeper (a live worker) ended the row it left pending.
    spawnWorker();
    const dead = await waitFor('the sweeper ends it', async () => {
      const r = await row('poison', 'poison_pill');
      return r?.status === 'dead' ? r : null;
    });
    const job = await jobOfRow('poison', 'poison_pill');
    expect(job).toMatchObject({ state: 'failed', retryCount: config.worker.retryLimit });
    expect(dead).toMatchObject({ status: 'dead', attempts: config.worker.retryLimit + 1 });
    expect(dead.last_error).toMatch(/^worker_lost:/);
    expect((await effectCounts(stack.db.pool, 'poison')).get('poison_pill')).toBeUndefined();
  });
});
