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

// Two worker processes with the same reconciling endpoint: the schedule queues one run per slot
// whichever worker queues it, and a run queued while another is active waits for it (the queue
// is `stately` per endpoint), so the provider's API never sees two listings of the endpoint at
// once, and each run is complete (none skipped because another held the lease).
let db: TestDatabase;
let stripe: FakeApi;
let claimer: Claimer;
let configFile: string;
const workers: RunningProcess[] = [];

const now = Math.floor(Date.now() / 1000);
// 300 events a minute apart over the last 5 hours; 10 never arrived.
const events: StripeEventObject[] = Array.from({ length: 300 }, (_, i) => ({
  id: `evt_workers_${i}`,
  object: 'event',
  type: 'invoice.created',
  created: now - 120 - i * 60,
  pending_webhooks: 0,
  data: { object: { id: `in_${i}`, object: 'invoice' } },
}));
const missing = (i: number) => i % 30 === 3;

beforeAll(async () => {
  db = await createTestDatabase();
  stripe = await startFakeStripeEvents(events);
  // Slow answers, so a run lasts seconds: long enough for a second worker to try to start one.
  stripe.delayAnswers(300);
  const document = {
    claim: { maxWait: '2ms' },
    endpoints: {
      pay: {
        provider: 'stripe',
        secrets: [STRIPE_SECRET],
        replay: { apiBase: stripe.url },
        // 12 windows of 30 minutes: 12 requests of 300 ms each per run.
        reconcile: { since: '6h', settle: '1m', window: '30m', every: '1h' },
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
  for (const worker of workers) worker.child.kill('SIGTERM');
  await Promise.all(workers.map((worker) => worker.exited().catch(() => {})));
  await claimer?.stop();
  await stripe?.close();
  await db?.drop();
});

const state = async () => (await readStates(db.pool)).find((row) => row.endpoint === 'pay');

describe('reconcile across worker processes', () => {
  it('one run of an endpoint at a time: a run queued during another waits for it, then runs in full', async () => {
    for (let i = 0; i < 2; i += 1) {
      workers.push(
        startHookgate(['serve', '--role', 'worker', '--config', configFile], {
          env: {
            DATABASE_URL: db.url,
            METRICS_PORT: '0',
            PORT: '0',
            LOG_LEVEL: 'info',
            STRIPE_API_KEY: 'rk_test_workers',
          },
        }),
      );
    }
    await Promise.all(workers.map((worker) => worker.waitFor(/reconcile: scheduled/, 60_000)));
    // Both workers queued the current slot's run at start: pg-boss kept one.
    await waitFor(
      'the first run to hold the endpoint',
      async () => (await state())?.running === true,
      60_000,
    );
    // As a slot's run would be queued while the previous one is still going: accepted (one may
    // wait), and a second one beside it is refused by the queue's policy.
    const queued = await claimer.boss.send(RECONCILE_QUEUE, { endpoint: 'pay' }, { singletonKey: 'pay' });
    const refused = await claimer.boss.send(RECONCILE_QUEUE, { endpoint: 'pay' }, { singletonKey: 'pay' });
    expect(queued).toEqual(expect.any(String));
    expect(refused).toBeNull();

    await waitFor(
      'both runs finished',
      async () => {
        const row = await state();
        return row?.runsTotal === 2 && !row.running;
      },
      90_000,
    );
    const output = () => workers.map((worker) => worker.output()).join('\n');
    const runLines = () => output().match(/reconcile: (run finished|found and filled missing events)/g) ?? [];
    // Each run's line follows its record: wait for the second.
    await waitFor('both runs logged', async () => runLines().length === 2, 30_000);
    // Never two listings at once, and neither run found the endpoint held by the other.
    expect(stripe.peakInFlight()).toBe(1);
    expect(output()).not.toMatch(/another run holds the endpoint/);
    expect(await state()).toMatchObject({ lastOutcome: 'complete', missingTotal: 10, runsTotal: 2 });
    const { rows } = await db.pool.query(
      `SELECT count(*)::int AS total, count(*) FILTER (WHERE received_via = 'api_reconcile')::int AS reconciled
         FROM hookgate.inbox WHERE endpoint = 'pay'`,
    );
    expect(rows[0]).toEqual({ total: 300, reconciled: 10 });

    // Either worker's /metrics reports the database-wide figures.
    const serving = await workers[1]!.waitFor(/hookgate is serving/);
    const port = /"metrics_port":(\d+)/.exec(serving)?.[1];
    const metrics = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
    expect(metrics).toContain('hookgate_reconcile_missing_total{endpoint="pay"} 10');
    const watermark = (await state())!.watermark!.getTime() / 1000;
    expect(metrics).toContain(
      `hookgate_reconcile_gap_free_until_timestamp_seconds{endpoint="pay"} ${watermark}`,
    );
    expect(metrics).toContain('hookgate_reconcile_stale_after_seconds{endpoint="pay"} 3600');
  }, 180_000);
});
