import pg from 'pg';
import { describe, expect, it } from 'vitest';
import { applyQueue } from '../../services/core/queue/names.ts';
import { type FakeDownstream, startFakeDownstream } from '../support/fake-downstream.ts';
import { effectCounts, STALL_LOCK, stalledBackends } from '../support/worker-effects.ts';
import { inboxRows, statusCounts, waitFor } from '../support/worker-harness.ts';
import { useWorkerStack } from '../support/worker-stack.ts';

// Recovery after a worker dies mid-batch, with the shipped timings (not the harness's fast ones):
// expireIn 2 min, heartbeat 10 s, supervision every 5 s, retries after 2 s. The promise: a
// SIGKILLed worker's in-flight events are applied by another worker once their heartbeat has
// lapsed, while a live worker whose batch outlasts the heartbeat keeps it. That the shipped
// timings bound the first within 30 s is arithmetic (test/unit/shipped-timings.test.ts); here the
// killed batch's heartbeat is backdated past its 10 s instead of waited out, and the other
// worker's supervision and polling, at their shipped intervals, do the rest.

const SHIPPED = {
  batchSize: 50,
  concurrency: 2,
  pollingInterval: '500ms',
  retryLimit: 7,
  retryDelay: '2s',
  retryDelayMax: '10m',
  expireIn: '2m',
  heartbeat: '10s',
  superviseInterval: '5s',
};
// Past the 10 s heartbeat by more than one refresh (every 10/3 s), so that a refresh lands after it.
const SLOW_MS = 16_000;

/** A `module:` handler that sleeps SLOW_MS on events whose id starts with `slow`, then writes once. */
const SLOW_HANDLER = `
export const handler = {
  async apply({ tx }, event) {
    if (event.eventId.startsWith('slow')) await new Promise((r) => setTimeout(r, ${SLOW_MS}));
    await tx.query('INSERT INTO public.slow_effects (event_id) VALUES ($1)', [event.eventId]);
  },
};
`;

let downstream: FakeDownstream;
const endpoints = {
  crash: { handler: 'project' },
  slow: { handler: 'module:./slow.mjs' },
  // A destination's default timeout (10 s): a delivery's lease lasts 15 s.
  out: { handler: 'record', destinations: { hook: { url: 'http://127.0.0.1:1/placeholder' } } },
};

let holder: pg.Client;

const stack = useWorkerStack({
  endpoints: () => endpoints,
  worker: SHIPPED,
  effects: true,
  setup: async (db) => {
    downstream = await startFakeDownstream();
    stack.defer(() => downstream.close());
    endpoints.out.destinations.hook.url = `${downstream.url}/hook`;
    await db.pool.query('CREATE TABLE public.slow_effects (event_id text NOT NULL)');
    // A killed worker's backend blocked on a lock notices its closed socket within 100 ms.
    await db.pool.query(`ALTER DATABASE ${db.name} SET client_connection_check_interval = '100ms'`);
    holder = new pg.Client({ connectionString: db.url });
    await holder.connect();
    stack.defer(() => holder.end());
  },
  besideConfig: { 'slow.mjs': SLOW_HANDLER },
  stopWorkers: 'afterEach',
  stopSignal: 'SIGKILL',
});
const spawnWorker = () => stack.spawnWorker();

/** Worker processes up and listening (each holds one wake-up connection once started). */
async function workersListening(n: number): Promise<void> {
  await waitFor(`${n} workers listening`, async () => {
    const { rows } = await stack.db.pool.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM pg_stat_activity
        WHERE datname = current_database() AND application_name = 'hookgate-worker-listen'`,
    );
    return rows[0]!.n === n;
  });
}

describe('recovery after a worker dies', { timeout: 300_000 }, () => {
  it('a SIGKILLed worker’s in-flight batch is applied by another worker once its heartbeat has lapsed', async () => {
    const events = Array.from({ length: 20 }, (_, i) => ({
      eventId: `inflight_${i}`,
      entityType: 'thing',
      entityId: `e_${i}`,
      version: 1,
    }));
    // Every event stalls inside its business write, so nothing of the claim can commit before the
    // kill: were the claim's job split over two batches, a batch without a stalling event would
    // commit on its own.
    await stack.db.pool.query('INSERT INTO public.stall_control SELECT unnest($1::text[])', [
      events.map((event) => event.eventId),
    ]);
    await holder.query('SELECT pg_advisory_lock($1)', [STALL_LOCK]);
    await stack.claimer.claim('crash', events);
    const victim = spawnWorker();
    await waitFor(
      'the batch stalled in flight',
      async () => (await stalledBackends(stack.db.pool)).length >= 1,
    );
    // The premise: all 20 events are held by the victim (every job that carries them is active,
    // on its first try).
    await waitFor('all 20 events held by the victim', async () => {
      const held = await stack.db.pool.query<{ n: number }>(
        `SELECT count(*)::int AS n
           FROM hookgate.inbox i JOIN pgboss.job j ON j.name = $1 AND j.id = i.dispatch_job
          WHERE i.endpoint = 'crash' AND j.state = 'active' AND j.retry_count = 0`,
        [applyQueue('crash')],
      );
      return held.rows[0]!.n === 20;
    });

    const rescuer = spawnWorker();
    await workersListening(2);
    // Still the premise at the kill: nothing applied yet.
    expect((await statusCounts(stack.db.pool, 'crash')).processed ?? 0).toBe(0);
    const killedAt = Date.now();
    victim.child.kill('SIGKILL');
    await victim.exited;
    await waitFor(
      'the killed batch rolled back',
      async () => (await stalledBackends(stack.db.pool)).length === 0,
    );
    await stack.db.pool.query('DELETE FROM public.stall_control');
    await holder.query('SELECT pg_advisory_unlock($1)', [STALL_LOCK]);
    // The killed batch's jobs as they are once the heartbeat has lapsed (10 s after the last
    // refresh): nothing refreshes them any more.
    const lapsed = await stack.db.pool.query(
      `UPDATE pgboss.job SET heartbeat_on = heartbeat_on - interval '1 minute'
        WHERE name = $1 AND state = 'active' RETURNING id`,
      [applyQueue('crash')],
    );
    expect(lapsed.rowCount).toBeGreaterThanOrEqual(1);

    await waitFor(
      'all 20 applied by the other worker',
      async () => (await statusCounts(stack.db.pool, 'crash')).processed === 20,
      120_000,
      50,
    );
    const recoveryMs = Date.now() - killedAt;
    console.log(
      `recovery after SIGKILL and the heartbeat's lapse: ${(recoveryMs / 1000).toFixed(1)} s for 20 in-flight events`,
    );
    expect(rescuer.child.exitCode).toBeNull();
    // Retried because the heartbeat lapsed, not because they expired (expireIn is 2 minutes).
    const retried = await stack.db.pool.query<{ retry_count: number }>(
      `SELECT retry_count FROM pgboss.job WHERE id = ANY($1::uuid[])`,
      [lapsed.rows.map((row) => row.id)],
    );
    for (const job of retried.rows) expect(job.retry_count).toBeGreaterThanOrEqual(1);
    // Each event: the killed attempt counted, the second applied it, exactly one effect.
    const rows = await inboxRows(stack.db.pool, 'crash');
    expect(rows.map((r) => [r.status, r.attempts])).toEqual(events.map(() => ['processed', 2]));
    const effects = await effectCounts(stack.db.pool, 'crash');
    expect(effects.size).toBe(20);
    expect([...effects.values()].every((n) => n === 1)).toBe(true);
  });

  it('a SIGKILLed worker’s downstream delivery in flight is sent again by another worker once its lease has run out', async () => {
    // The first request hangs (the victim is killed while it waits); the next one is answered.
    downstream.script('/hook', [{ status: 200, delayMs: 120_000 }, 200]);
    const victim = spawnWorker();
    await stack.claimer.claim('out', [{ eventId: 'out_1' }]);
    await downstream.waitFor('/hook', 1, 30_000);
    const rescuer = spawnWorker();
    await workersListening(2);
    const killedAt = Date.now();
    victim.child.kill('SIGKILL');
    await victim.exited;
    // Its lease as it is once it has run out (the shipped lease: the destination's timeout and a
    // margin, whose arithmetic the destinations' unit tests prove), instead of waiting it out.
    const lapsed = await stack.db.pool.query(
      `UPDATE hookgate.destination_deliveries SET lease_until = now() - interval '1 second'
        WHERE endpoint = 'out' AND event_id = 'out_1' AND status = 'sending' RETURNING id`,
    );
    expect(lapsed.rowCount).toBe(1);
    const [, second] = await downstream.waitFor('/hook', 2, 120_000);
    console.log(
      `downstream delivery resent ${((second!.at - killedAt) / 1000).toFixed(1)} s after the SIGKILL`,
    );
    await waitFor('delivered', async () => {
      const { rows } = await stack.db.pool.query(
        `SELECT status FROM hookgate.destination_deliveries WHERE endpoint = 'out' AND event_id = 'out_1'`,
      );
      return rows[0]?.status === 'delivered';
    });
    expect(rescuer.child.exitCode).toBeNull();
  });

  it('a live worker whose batch outlasts the heartbeat keeps it: applied once, first attempt', async () => {
    const a = spawnWorker();
    const b = spawnWorker();
    await workersListening(2);
    await stack.claimer.claim('slow', [{ eventId: 'slow_1' }]);
    const { rows: carried } = await stack.db.pool.query<{ id: string }>(
      `SELECT dispatch_job::text AS id FROM hookgate.inbox WHERE endpoint = 'slow' AND event_id = 'slow_1'`,
    );
    const jobId = carried[0]!.id;
    const started = await waitFor('the slow job taken', async () => {
      const { rows } = await stack.db.pool.query<{ started_on: Date }>(
        `SELECT started_on FROM pgboss.job WHERE id = $1 AND state = 'active'`,
        [jobId],
      );
      return rows[0]?.started_on ?? null;
    });
    // While it sleeps, its job stays with its first attempt; sample it until it settles.
    let lastBeat: Date | null = null;
    for (;;) {
      const { rows } = await stack.db.pool.query<{ state: string; retry_count: number; heartbeat_on: Date }>(
        'SELECT state, retry_count, heartbeat_on FROM pgboss.job WHERE id = $1',
        [jobId],
      );
      const job = rows[0]!;
      expect(job.retry_count).toBe(0);
      if (job.state !== 'active') {
        expect(job.state).toBe('completed');
        break;
      }
      lastBeat = job.heartbeat_on;
      await new Promise((r) => setTimeout(r, 250));
    }
    // The premise: the batch ran past the heartbeat window and was kept alive by refreshes.
    expect(lastBeat).not.toBeNull();
    expect(lastBeat!.getTime() - started.getTime()).toBeGreaterThan(10_000);
    const rows = await inboxRows(stack.db.pool, 'slow');
    expect(rows).toMatchObject([{ event_id: 'slow_1', status: 'processed', attempts: 1 }]);
    const writes = await stack.db.pool.query('SELECT event_id FROM public.slow_effects');
    expect(writes.rows).toEqual([{ event_id: 'slow_1' }]);
    expect(a.child.exitCode).toBeNull();
    expect(b.child.exitCode).toBeNull();
  });
});
