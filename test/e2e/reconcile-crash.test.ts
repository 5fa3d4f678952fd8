import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseConfig } from '../../services/core/config/load.ts';
import { RECONCILE_QUEUE } from '../../services/core/reconcile/schedule.ts';
import { readStates } from '../../services/core/reconcile/state-sql.ts';
import { createTestDatabase, type TestDatabase } from '../support/database.ts';
import {
  type FakeApi,
  type StripeEventObject,
  startFakeStripeEvents,
} from '../support/fake-provider-apis.ts';
import { STRIPE_SECRET } from '../support/gateway.ts';
import { type RunningProcess, startHookgate } from '../support/process.ts';
import { Claimer, waitFor, writeConfigFile } from '../support/worker-harness.ts';

// A worker SIGKILLed in the middle of a reconciliation run: what it claimed stays claimed, the
// watermark stays where its last complete window put it, and another worker finishes the job once
// the dead run's job (heartbeat) and lease have expired: every missing event filled once.
//
// The run is caught mid-way by holding the API's ninth answer (not by slowing every answer), and
// the minutes after the kill are not waited out: the dead run's rows are backdated two minutes
// (its job's heartbeat of 30 s and its slot of a minute gone by, its 90 s lease run out), as they
// would be two minutes later; pg-boss's supervision in the other worker then fails the job and
// the reconciler's lease and schedule take it from there, as in production.
let db: TestDatabase;
let stripe: FakeApi;
let claimer: Claimer;
let configFile: string;
const workers: RunningProcess[] = [];

const now = Math.floor(Date.now() / 1000);
// 600 events a minute apart over the last 10 hours; every 20th never arrived (30).
const events: StripeEventObject[] = Array.from({ length: 600 }, (_, i) => ({
  id: `evt_crash_${i}`,
  object: 'event',
  type: 'invoice.created',
  created: now - 120 - i * 60,
  pending_webhooks: 0,
  data: { object: { id: `in_${i}`, object: 'invoice' } },
}));
const missing = (i: number) => i % 20 === 5;

const env = {
  METRICS_PORT: '0',
  PORT: '0',
  LOG_LEVEL: 'info',
  STRIPE_API_KEY: 'rk_test_crash',
};

function startWorker(): RunningProcess {
  const worker = startHookgate(['serve', '--role', 'worker', '--config', configFile], {
    env: { ...env, DATABASE_URL: db.url },
  });
  workers.push(worker);
  return worker;
}

beforeAll(async () => {
  db = await createTestDatabase();
  stripe = await startFakeStripeEvents(events);
  const document = {
    claim: { maxWait: '2ms' },
    worker: { superviseInterval: '2s' },
    endpoints: {
      pay: {
        provider: 'stripe',
        secrets: [STRIPE_SECRET],
        replay: { apiBase: stripe.url },
        reconcile: { since: '11h', settle: '1m', window: '15m', every: '1m' },
      },
    },
  };
  configFile = writeConfigFile(document);
  claimer = await Claimer.start(db.url, parseConfig(document, {}));
  await claimer.claim(
    'pay',
    events.filter((_, i) => !missing(i)).map((event) => ({ eventId: event.id, body: event })),
  );
}, 120_000);

afterAll(async () => {
  for (const worker of workers) worker.child.kill('SIGKILL');
  await Promise.all(workers.map((worker) => worker.exited().catch(() => {})));
  await claimer?.stop();
  await stripe?.close();
  await db?.drop();
});

const state = async () => (await readStates(db.pool)).find((row) => row.endpoint === 'pay');

async function inbox() {
  const { rows } = await db.pool.query<{ total: number; reconciled: number }>(
    `SELECT count(*)::int AS total, count(*) FILTER (WHERE received_via = 'api_reconcile')::int AS reconciled
       FROM hookgate.inbox WHERE endpoint = 'pay'`,
  );
  return rows[0]!;
}

describe('reconcile when its worker is killed mid-run', () => {
  it('keeps what was claimed and the complete windows, and another worker completes the run later', async () => {
    // 44 windows of 15 minutes, one request each: the ninth is held, the run stops there.
    stripe.holdAfter(8);
    const first = startWorker();
    // Killed once the run has moved the watermark over a few windows, and before it is done.
    await waitFor(
      'the first run past a few windows, waiting on the API',
      async () => {
        const row = await state();
        return row?.running === true && row.watermark !== null && stripe.held() === 1;
      },
      60_000,
    );
    first.child.kill('SIGKILL');
    await first.exited();
    stripe.release();
    const atKill = await state();
    expect(atKill?.runsTotal).toBe(0);
    const watermarkAtKill = atKill!.watermark!;
    const claimedAtKill = await inbox();
    // Nothing claimed twice, nothing lost: the rows are the received ones and some reconciled.
    expect(claimedAtKill.total).toBe(570 + claimedAtKill.reconciled);
    expect(claimedAtKill.reconciled).toBeLessThan(30);

    // Two minutes later, for the dead run's rows: its job's heartbeat and slot are past, its lease
    // has run out (it was renewed at most 30 s before the kill, for 90 s).
    const backdated = await db.pool.query(
      `UPDATE pgboss.job
          SET created_on = created_on - interval '2 minutes', started_on = started_on - interval '2 minutes',
              heartbeat_on = heartbeat_on - interval '2 minutes', singleton_on = singleton_on - interval '2 minutes'
        WHERE name = $1 AND state = 'active'
       RETURNING id`,
      [RECONCILE_QUEUE],
    );
    expect(backdated.rowCount).toBe(1);
    await db.pool.query(
      `UPDATE hookgate.reconcile_state
          SET lease_until = lease_until - interval '2 minutes', last_run_started_at = last_run_started_at - interval '2 minutes'
        WHERE endpoint = 'pay'`,
    );
    expect((await state())?.running).toBe(false);

    // Another worker: the dead run's job fails on its heartbeat, the lease is free, and the
    // current slot's run lists from the watermark minus lookback to now.
    startWorker();
    await waitFor(
      'a complete run after the crash',
      async () => (await state())?.lastOutcome === 'complete',
      120_000,
    );
    const after = await state();
    expect(after!.watermark!.getTime()).toBeGreaterThan(watermarkAtKill.getTime());
    expect(after!.missingTotal).toBe(30 - claimedAtKill.reconciled);
    expect(await inbox()).toEqual({ total: 600, reconciled: 30 });
    // The dead run's job ended failed (its heartbeat stopped), not completed.
    const { rows: jobs } = await db.pool.query<{ state: string }>(
      `SELECT state FROM pgboss.job WHERE id = $1`,
      [backdated.rows[0]!.id],
    );
    expect(jobs[0]?.state).toBe('failed');
  }, 240_000);
});
