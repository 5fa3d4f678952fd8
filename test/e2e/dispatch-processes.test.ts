import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { parseConfig } from '../../services/core/config/load.ts';
import { freePort } from '../../services/core/db/embedded.ts';
import { createTestDatabase, type TestDatabase } from '../support/database.ts';
import { post, standardWebhook } from '../support/deliveries.ts';
import { type RunningProcess, startHookgate } from '../support/process.ts';
import { Claimer, waitFor, workerConfigDocument } from '../support/worker-harness.ts';

// Batch dispatch with real processes: a gateway and a worker (`serve`), deliveries over HTTP.
// - a batch whose events partly fail: the failing ones are sent again in new jobs with their
//   backoff and applied on a later attempt, their neighbours once, at their first attempt;
// - the sweeper: pending rows whose job is gone (deleted, as retention or an operator would) are
//   sent again by the running worker and applied;
// - a redelivery after `hookgate prune` removed the row: accepted as a new event, with a job of
//   its own, applied once more.

const SECRET = 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw';

// Fails an event's first `failFor` attempts (a number in its payload), then applies it; every
// applied event writes one effect row, in the apply transaction.
const HANDLER = `
export const handler = {
  async apply({ tx }, event) {
    const failFor = Number(event.payload?.data?.failFor ?? 0);
    if (event.attempts <= failFor) throw new Error('failing attempt ' + event.attempts + ' on purpose');
    await tx.query('INSERT INTO public.dispatch_effects (event_id, attempt) VALUES ($1, $2)', [
      event.eventId,
      event.attempts,
    ]);
  },
};
`;

const DOCUMENT = workerConfigDocument(
  { batch: { handler: 'module:./handler.mjs' } },
  // Three attempts, one second apart; the sweeper looks every 2 s at rows older than that.
  { batchSize: 50, retryLimit: 2, retryDelay: '1s', retryDelayMax: '1s', sweepInterval: '2s' },
);
const config = parseConfig(DOCUMENT, {});

let db: TestDatabase;
let dir: string;
let configFile: string;
let gatewayUrl: string;
const env = () => ({ DATABASE_URL: db.url, METRICS_PORT: '0', LOG_LEVEL: 'warn' });
const processes: RunningProcess[] = [];

function startWorker(): RunningProcess {
  const worker = startHookgate(['serve', '--role', 'worker', '--config', configFile], {
    env: { ...env(), PORT: '0', LOG_LEVEL: 'info' },
  });
  processes.push(worker);
  return worker;
}

async function effects(eventIds: readonly string[]): Promise<Record<string, number[]>> {
  const { rows } = await db.pool.query<{ event_id: string; attempt: number }>(
    'SELECT event_id, attempt FROM public.dispatch_effects WHERE event_id = ANY($1) ORDER BY event_id, attempt',
    [eventIds],
  );
  const byEvent: Record<string, number[]> = {};
  for (const row of rows) byEvent[row.event_id] = [...(byEvent[row.event_id] ?? []), row.attempt];
  return byEvent;
}

async function rows(eventIds: readonly string[]) {
  const { rows } = await db.pool.query<{ event_id: string; status: string; attempts: number }>(
    `SELECT event_id, status, attempts FROM hookgate.inbox
      WHERE endpoint = 'batch' AND event_id = ANY($1) ORDER BY event_id`,
    [eventIds],
  );
  return rows;
}

async function deliver(eventId: string, data: Record<string, unknown> = {}) {
  const delivery = standardWebhook(SECRET, { eventId, data: { id: eventId, ...data } });
  const reply = await post(`${gatewayUrl}/webhooks/batch`, delivery);
  expect(reply.status).toBe(200);
  return reply.json as { status: string };
}

beforeAll(async () => {
  db = await createTestDatabase();
  await db.pool.query('CREATE TABLE public.dispatch_effects (event_id text NOT NULL, attempt int NOT NULL)');
  dir = mkdtempSync(join(tmpdir(), 'hookgate-dispatch-'));
  configFile = join(dir, 'hookgate.yaml');
  writeFileSync(join(dir, 'handler.mjs'), HANDLER);
  writeFileSync(configFile, stringify(DOCUMENT));
  const port = await freePort();
  gatewayUrl = `http://127.0.0.1:${port}`;
  const gateway = startHookgate(['serve', '--role', 'gateway', '--config', configFile], {
    env: { ...env(), PORT: String(port) },
  });
  processes.push(gateway);
  await waitFor(
    'gateway ready',
    async () => (await fetch(`${gatewayUrl}/readyz`).catch(() => null))?.ok === true,
    60_000,
  );
});

afterAll(async () => {
  for (const running of processes) running.child.kill('SIGKILL');
  await Promise.all(processes.map((running) => running.exited().catch(() => {})));
  await db?.drop();
  rmSync(dir, { recursive: true, force: true });
});

describe('batch dispatch, with a gateway and a worker as processes', { timeout: 180_000 }, () => {
  it('sends only the failed events of a batch again; they apply later, their neighbours once', async () => {
    // One claim while no worker runs, as the gateway's group commit claims a burst: one job
    // carrying all 14, which the worker applies in one transaction.
    const ok = Array.from({ length: 12 }, (_, n) => `ok_${n}`);
    const failing = ['fail_once', 'fail_twice'];
    const claimer = await Claimer.start(db.url, config);
    try {
      await claimer.claim('batch', [
        ...ok.slice(0, 6).map((eventId) => ({ eventId, body: { data: { id: eventId } } })),
        { eventId: 'fail_once', body: { data: { failFor: 1 } } },
        { eventId: 'fail_twice', body: { data: { failFor: 2 } } },
        ...ok.slice(6).map((eventId) => ({ eventId, body: { data: { id: eventId } } })),
      ]);
    } finally {
      await claimer.stop();
    }
    const claimed = await db.pool.query<{ n: number; events: number }>(
      `SELECT count(*)::int AS n, sum(jsonb_array_length(data->'eventIds'))::int AS events
         FROM pgboss.job WHERE name = 'hookgate.apply.batch'`,
    );
    expect(claimed.rows).toEqual([{ n: 1, events: 14 }]);

    const worker = startWorker();
    await worker.waitFor(/hookgate is serving/, 60_000);
    await waitFor(
      'every event applied',
      async () => (await rows([...ok, ...failing])).every((row) => row.status === 'processed'),
      60_000,
    );
    const byEvent = await effects([...ok, ...failing]);
    for (const id of ok) expect(byEvent[id], id).toEqual([1]);
    expect(byEvent.fail_once).toEqual([2]);
    expect(byEvent.fail_twice).toEqual([3]);
    expect(await rows(failing)).toEqual([
      { event_id: 'fail_once', status: 'processed', attempts: 2 },
      { event_id: 'fail_twice', status: 'processed', attempts: 3 },
    ]);
    // The failed attempts went out again, after their backoff, in jobs of their own that named
    // only the failed events: the first attempt of both together, the second of fail_twice.
    const retries = await db.pool.query<{ events: string[] }>(
      `SELECT array(SELECT jsonb_array_elements_text(data->'eventIds') ORDER BY 1) AS events
         FROM pgboss.job WHERE name = 'hookgate.apply.batch' AND start_after > created_on + interval '500 milliseconds'
        ORDER BY created_on`,
    );
    expect(retries.rows.map((row) => row.events)).toEqual([['fail_once', 'fail_twice'], ['fail_twice']]);
  });

  it('the sweeper sends pending events whose job is gone again, and the worker applies them', async () => {
    const worker = processes.at(-1)!;
    worker.child.kill('SIGTERM');
    await worker.exited();
    const ids = ['orphan_1', 'orphan_2', 'orphan_3'];
    for (const id of ids) await deliver(id);
    // Their jobs vanish (pg-boss retention, an operator): nothing would ever apply the rows.
    const deleted = await db.pool.query(
      `DELETE FROM pgboss.job j USING hookgate.inbox i
        WHERE i.endpoint = 'batch' AND i.event_id = ANY($1) AND j.name = 'hookgate.apply.batch' AND j.id = i.dispatch_job`,
      [ids],
    );
    expect(deleted.rowCount).toBeGreaterThan(0);
    const restarted = startWorker();
    await restarted.waitFor(/pending events had no live job; sent them again/, 30_000);
    await waitFor(
      'the orphans applied',
      async () => (await rows(ids)).every((row) => row.status === 'processed'),
      30_000,
    );
    const byEvent = await effects(ids);
    for (const id of ids) expect(byEvent[id], id).toEqual([1]);
  });

  it('a redelivery after prune is a new event with its own job, applied once more', async () => {
    expect((await deliver('pruned_1')).status).toBe('accepted');
    await waitFor('applied', async () => (await rows(['pruned_1']))[0]?.status === 'processed', 30_000);
    expect((await deliver('pruned_1')).status).toBe('duplicate');
    const first = await db.pool.query<{ job: string }>(
      `SELECT dispatch_job::text AS job FROM hookgate.inbox WHERE endpoint = 'batch' AND event_id = 'pruned_1'`,
    );
    // Old enough for prune's window, then pruned by the command itself.
    await db.pool.query(
      `UPDATE hookgate.inbox SET received_at = now() - interval '40 days' WHERE endpoint = 'batch' AND event_id = 'pruned_1'`,
    );
    const prune = startHookgate(['prune', '--older-than', '30d', '--config', configFile], { env: env() });
    expect(await prune.exited()).toBe(0);
    expect(await rows(['pruned_1'])).toEqual([]);

    expect((await deliver('pruned_1')).status).toBe('accepted');
    await waitFor('applied again', async () => (await rows(['pruned_1']))[0]?.status === 'processed', 30_000);
    const second = await db.pool.query<{ job: string }>(
      `SELECT dispatch_job::text AS job FROM hookgate.inbox WHERE endpoint = 'batch' AND event_id = 'pruned_1'`,
    );
    expect(second.rows[0]!.job).not.toBe(first.rows[0]!.job);
    // One effect per accepted row: the first delivery's, and the redelivery's after prune.
    expect((await effects(['pruned_1'])).pruned_1).toEqual([1, 1]);
  });
});
