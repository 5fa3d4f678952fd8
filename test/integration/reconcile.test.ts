import { randomUUID } from 'node:crypto';
import { Registry } from 'prom-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Config } from '../../services/core/config/schema.ts';
import { type Claim, claimBatch } from '../../services/core/inbox/claim.ts';
import { createProvider } from '../../services/core/providers/index.ts';
import { registerReconcileMetrics } from '../../services/core/reconcile/metrics.ts';
import { reconcileEndpoint } from '../../services/core/reconcile/run.ts';
import { readStates } from '../../services/core/reconcile/state-sql.ts';
import { replaySourceFor } from '../../services/core/replay/source-for.ts';
import { createTestDatabase, type TestDatabase } from '../support/database.ts';
import {
  type FakeApi,
  type GithubDelivery,
  type PaddleEventEntity,
  type StripeEventObject,
  startFakeGithubDeliveries,
  startFakePaddleEvents,
  startFakeStripeEvents,
} from '../support/fake-provider-apis.ts';
import { STRIPE_SECRET, testConfig } from '../support/gateway.ts';
import { Claimer } from '../support/worker-harness.ts';

// Reconciliation against fake Stripe and GitHub APIs that page, rate-limit and fail like the real
// ones: what the inbox lacks is found and filled exactly once across runs, what it has (under its
// id, or for GitHub under another id with the same body) is never stored again, and the watermark
// moves only over windows whose every page was listed and claimed.
const MINUTE = 60_000;
const HOUR = 60 * MINUTE;
// A fixed clock for the runs (the fake APIs filter on the events' own times): windows are exact.
const NOW = Math.floor(Date.now() / 1000) * 1000;
const at = (msBeforeNow: number) => new Date(NOW - msBeforeNow);

let db: TestDatabase;
let claimer: Claimer;
let config: Config;
let stripe: FakeApi;
let github: FakeApi;
let paddle: FakeApi;

// 300 Stripe events a minute apart, newest 2 minutes old; every 15th (i % 15 === 7) never arrived.
const stripeEvents: StripeEventObject[] = Array.from({ length: 300 }, (_, i) => ({
  id: `evt_rec_${String(i).padStart(3, '0')}`,
  object: 'event',
  type: 'invoice.created',
  created: (NOW - 2 * MINUTE - i * MINUTE) / 1000,
  // Stripe's own account of its deliveries: pending_webhooks > 0 until one answered 2xx.
  pending_webhooks: i === 22 || i === 100 || i === 101 ? 1 : 0,
  data: { object: { id: `in_${i}`, object: 'invoice' } },
}));
const stripeMissing = (i: number) => i % 15 === 7;

// 150 GitHub deliveries two minutes apart, plus redeliveries and two older than any window.
const guids = Array.from({ length: 150 }, () => randomUUID());
const issue = (i: number) => ({ action: 'opened', issue: { number: i }, repository: { id: 1 } });
const githubDeliveries: GithubDelivery[] = [
  ...guids.map((guid, i) => ({
    id: 1000 + i,
    guid,
    deliveredAt: at(2 * MINUTE + i * 2 * MINUTE),
    event: 'issues',
    action: 'opened',
    payload: issue(i),
    // The receiver answered 503: GitHub counts the delivery failed (and it is one of the missing).
    ...(i === 20 ? { statusCode: 503 } : {}),
  })),
  // Redeliveries (same GUID): of a missing event and of a present one. One effect each.
  ...[10, 11].map((i) => ({
    id: 5000 + i,
    guid: guids[i]!,
    deliveredAt: at(MINUTE + 30_000),
    event: 'issues',
    action: 'opened',
    payload: issue(i),
    redelivery: true,
  })),
  ...[0, 1].map((i) => ({
    id: 100 + i,
    guid: randomUUID(),
    deliveredAt: at(30 * HOUR),
    event: 'issues',
    action: 'closed',
    payload: issue(900 + i),
  })),
];
// Missing: every 10th from 0 (0, 10, …, 140: 15 events) except 50, which the gateway received
// under a made-up delivery id (the body digest knows it).
const githubMissing = (i: number) => i % 10 === 0 && i !== 50;

// 250 Paddle events a minute apart, ids growing with time (i 249 the newest); every 25th missing.
const paddleEvents: PaddleEventEntity[] = Array.from({ length: 250 }, (_, i) => ({
  event_id: `evt_01hrec${String(i).padStart(4, '0')}`,
  event_type: 'subscription.updated',
  occurred_at: at(2 * MINUTE + (249 - i) * MINUTE).toISOString(),
  data: { id: `sub_${i}`, status: 'active', updated_at: at(2 * MINUTE + (249 - i) * MINUTE).toISOString() },
}));
const paddleMissing = (i: number) => i % 25 === 0;

beforeAll(async () => {
  db = await createTestDatabase();
  stripe = await startFakeStripeEvents(stripeEvents);
  github = await startFakeGithubDeliveries('acme/shop', 42, githubDeliveries);
  paddle = await startFakePaddleEvents(paddleEvents);
  const reconcile = { since: '6h', lookback: '30m', settle: '1m', window: '2h' };
  config = testConfig({
    endpoints: {
      pay: { provider: 'stripe', secrets: [STRIPE_SECRET], replay: { apiBase: stripe.url }, reconcile },
      // The same API with a budget of 2 requests per run.
      paybudget: {
        provider: 'stripe',
        secrets: [STRIPE_SECRET],
        replay: { apiBase: stripe.url },
        reconcile: { ...reconcile, budget: 2 },
      },
      gh: {
        provider: 'github',
        secrets: ['github-secret-for-tests'],
        replay: { apiBase: github.url, repository: 'acme/shop', hookId: 42 },
        reconcile: { since: '6h', lookback: '1h', settle: '1m' },
      },
      pad: {
        provider: 'paddle',
        secrets: ['pdl_ntfset_01hreconciletest_secret'],
        replay: { apiBase: paddle.url },
        reconcile: { since: '6h', lookback: '1h', settle: '1m' },
      },
    },
  });
  claimer = await Claimer.start(db.url, config);
  // What the gateway received before: claimed as the gateway claims a verified delivery.
  await claimAsGateway(
    'pay',
    stripeEvents
      .filter((_, i) => !stripeMissing(i))
      .map((event) => ({ body: JSON.stringify(event), headers: {} })),
  );
  await claimAsGateway(
    'gh',
    guids.flatMap((guid, i) => {
      if (githubMissing(i)) return [];
      // The delivery's bytes differ from the API's JSON (spacing): the digest is of the JSON value.
      const body = JSON.stringify(issue(i), null, i === 50 ? 2 : undefined);
      return [{ body, headers: githubHeaders(i === 50 ? `made-up-${randomUUID()}` : guid) }];
    }),
  );
  // The deliveries carried a notification_id besides the event (the API's entity has none).
  await claimAsGateway(
    'pad',
    paddleEvents.flatMap((event, i) =>
      paddleMissing(i)
        ? []
        : [{ body: JSON.stringify({ ...event, notification_id: `ntf_${i}` }), headers: {} }],
    ),
  );
}, 120_000);

afterAll(async () => {
  await claimer?.stop();
  await stripe?.close();
  await github?.close();
  await paddle?.close();
  await db?.drop();
});

function githubHeaders(delivery: string) {
  return { 'x-github-delivery': delivery, 'x-github-event': 'issues', 'content-type': 'application/json' };
}

async function claimAsGateway(endpoint: string, items: { body: string; headers: Record<string, string> }[]) {
  const provider = createProvider(config.endpoints[endpoint]!);
  const claims: Claim[] = items.map((item) => {
    const identity = provider.identify({ headers: item.headers, body: JSON.parse(item.body) });
    if (!identity.ok || !('event' in identity)) throw new Error('the test event has no identity');
    return { endpoint, provider: provider.name, event: identity.event, body: item.body, traceparent: null };
  });
  const results = await claimBatch(claimer.pool, claimer.boss, claims);
  expect(results.every((result) => result.ok && result.outcome === 'accepted')).toBe(true);
}

function run(endpoint: string, options: { dryRun?: boolean; since?: Date; force?: boolean } = {}) {
  const settings = config.endpoints[endpoint]!;
  const source = replaySourceFor(endpoint, settings, {
    STRIPE_API_KEY: 'rk_test',
    GITHUB_TOKEN: 'ghp_test',
    PADDLE_API_KEY: 'pdl_test',
  });
  return reconcileEndpoint(claimer.pool, options.dryRun ? null : claimer.boss, endpoint, settings, source, {
    ...options,
    now: () => NOW,
    horizonMs: config.dedupe.horizon,
  });
}

async function inbox(endpoint: string) {
  const { rows } = await db.pool.query<{ total: number; reconciled: number }>(
    `SELECT count(*)::int AS total, count(*) FILTER (WHERE received_via = 'api_reconcile')::int AS reconciled
       FROM hookgate.inbox WHERE endpoint = $1`,
    [endpoint],
  );
  return rows[0]!;
}

async function stateOf(endpoint: string) {
  return (await readStates(db.pool)).find((state) => state.endpoint === endpoint);
}

describe('reconcile: Stripe', () => {
  it('a dry run counts what is missing and stores, moves and leases nothing', async () => {
    const report = await run('pay', { dryRun: true });
    expect(report).toMatchObject({
      outcome: 'complete',
      listed: 300,
      present: 280,
      filled: 20,
      deliveryFailures: 3,
      watermark: null,
    });
    expect(report.from).toEqual(at(6 * HOUR));
    expect(report.until).toEqual(at(MINUTE));
    expect(await inbox('pay')).toEqual({ total: 280, reconciled: 0 });
    expect(await stateOf('pay')).toBeUndefined();
  });

  it('a 429 is waited out; a page failing mid-run ends the run with the watermark at the last complete window', async () => {
    stripe.requests.length = 0;
    stripe.rateLimitNext(1);
    // Windows: [6h, 4h) one page (i 239–299); [4h, 2h) two pages (i 119–218, 219–238), the
    // second fails; [2h, 1m) (i 0–118) not reached.
    const failingAfter = 'evt_rec_218';
    stripe.failWhere((url) => url.searchParams.get('starting_after') === failingAfter);
    const report = await run('pay');
    stripe.failWhere(null);
    expect(report.outcome).toBe('failed');
    expect(report.error).toMatch(/^replay_fetch_failed: Stripe events\.list/);
    // Filled: the missing of window 1 (247, 262, 277, 292) and of window 2's first page (127 … 217).
    const filled = 11;
    expect(report).toMatchObject({
      listed: 61 + 100,
      filled,
      present: 161 - filled,
      watermark: at(4 * HOUR),
    });
    // The 429 (Retry-After: 1) first, then window 1, window 2's first page, its failing second.
    expect(stripe.requests.slice(0, 3).map((r) => r.status)).toEqual([429, 200, 200]);
    expect(stripe.requests.slice(3).every((r) => r.status === 500)).toBe(true);
    // hookgate's requests (the client's own retries of a 5xx are not hookgate's).
    expect(report.apiCalls).toBe(4);
    expect(await inbox('pay')).toEqual({ total: 280 + filled, reconciled: filled });
    expect(await stateOf('pay')).toMatchObject({
      watermark: at(4 * HOUR),
      coveredSince: at(6 * HOUR),
      lastOutcome: 'failed',
      lastSuccessAt: null,
      running: false,
      missingTotal: filled,
      last: { filled, apiCalls: 4 },
    });
  }, 60_000);

  it('the next run starts at the watermark minus lookback, fills the rest, and moves the watermark to now − settle', async () => {
    stripe.requests.length = 0;
    const report = await run('pay');
    const from = NOW - 4 * HOUR - 30 * MINUTE;
    expect(report.from).toEqual(new Date(from));
    // i 0–268; the missing not filled by the failed run: 232 and the 8 below i 119.
    const listed = 269;
    const filled = 9;
    expect(report).toMatchObject({
      outcome: 'complete',
      error: null,
      listed,
      filled,
      present: listed - filled,
      watermark: at(MINUTE),
    });
    expect(report.apiCalls).toBe(stripe.requests.length);
    // Every event once: 300 rows, the 20 missing ones reconciled, none counted as a delivery
    // (the 280 accepted are the gateway's).
    expect(await inbox('pay')).toEqual({ total: 300, reconciled: 20 });
    const delivered = await db.pool.query(
      `SELECT coalesce(sum(accepted), 0)::int AS accepted FROM hookgate.delivery_counts WHERE endpoint = 'pay'`,
    );
    expect(delivered.rows[0].accepted).toBe(280);
    const state = await stateOf('pay');
    expect(state).toMatchObject({
      watermark: at(MINUTE),
      lastOutcome: 'complete',
      missingTotal: 20,
      runsTotal: 2,
    });
    expect(state?.lastSuccessAt).toBeInstanceOf(Date);

    // Again: nothing missing; the watermark stays where it is.
    const again = await run('pay');
    expect(again).toMatchObject({ outcome: 'complete', filled: 0, watermark: at(MINUTE) });
    expect(again.present).toBe(again.listed);
    expect(await inbox('pay')).toEqual({ total: 300, reconciled: 20 });
  }, 60_000);

  it('the budget stops a run; the windows it finished keep their progress', async () => {
    // An endpoint whose inbox is empty: all it lists is missing.
    const report = await run('paybudget');
    // Request 1: window 1; request 2: window 2's first page; a third would exceed the budget.
    expect(report).toMatchObject({
      outcome: 'budget',
      apiCalls: 2,
      listed: 161,
      filled: 161,
      watermark: at(4 * HOUR),
    });
    expect(report.error).toMatch(/^reconcile_budget_spent: /);
    expect(await stateOf('paybudget')).toMatchObject({
      lastOutcome: 'budget',
      watermark: at(4 * HOUR),
      lastSuccessAt: null,
    });
  });

  it('--since above the watermark lists and fills but leaves the watermark (the span between was not listed)', async () => {
    const report = await run('paybudget', { since: at(HOUR) });
    expect(report).toMatchObject({ outcome: 'complete', listed: 59, filled: 59, watermark: at(4 * HOUR) });
    expect((await stateOf('paybudget'))?.watermark).toEqual(at(4 * HOUR));
  });

  it('a run while another holds the endpoint does nothing', async () => {
    await db.pool.query(
      `UPDATE hookgate.reconcile_state SET lease_owner = $1, lease_until = clock_timestamp() + interval '1 minute' WHERE endpoint = 'pay'`,
      [randomUUID()],
    );
    stripe.requests.length = 0;
    await expect(run('pay')).rejects.toMatchObject({ code: 'reconcile_busy' });
    expect(stripe.requests).toHaveLength(0);
    // An expired lease (its run died) is taken over.
    await db.pool.query(
      `UPDATE hookgate.reconcile_state SET lease_until = clock_timestamp() - interval '1 second' WHERE endpoint = 'pay'`,
    );
    expect((await run('pay')).outcome).toBe('complete');
  });

  it('a listing reaching past the dedupe horizon is refused with a sentence and recorded as failed; forced, it runs', async () => {
    stripe.requests.length = 0;
    const since = at(40 * 24 * HOUR);
    await expect(run('paybudget', { since })).rejects.toMatchObject({
      code: 'dedupe_horizon_exceeded',
      message: expect.stringMatching(
        /^The reconciliation window starts at .*dedupe\.horizon is 35d.*--force/,
      ),
    });
    await expect(run('paybudget', { since, dryRun: true })).rejects.toMatchObject({
      code: 'dedupe_horizon_exceeded',
    });
    expect(stripe.requests).toHaveLength(0);
    expect(await stateOf('paybudget')).toMatchObject({
      lastOutcome: 'failed',
      lastError: expect.stringMatching(/^dedupe_horizon_exceeded: /),
      running: false,
      watermark: at(4 * HOUR),
    });
    // Forced: it lists (until its budget here), and the watermark it had stays.
    expect(await run('paybudget', { since, force: true })).toMatchObject({ outcome: 'budget', apiCalls: 2 });
    expect((await stateOf('paybudget'))?.watermark).toEqual(at(4 * HOUR));
  });
});

describe('reconcile: GitHub', () => {
  it('pages, fetches only the deliveries the inbox lacks, fills them once, and absorbs the copy stored under another id', async () => {
    // The second list page fails: one window, so the watermark does not move.
    github.failWhere((url) => url.searchParams.has('cursor'));
    const failed = await run('gh');
    github.failWhere(null);
    expect(failed.outcome).toBe('failed');
    expect(failed.watermark).toBeNull();
    expect((await stateOf('gh'))?.watermark).toBeNull();
    const firstPage = failed.filled;
    expect(firstPage).toBeGreaterThan(0);

    github.requests.length = 0;
    const report = await run('gh');
    const missing = guids.filter((_, i) => githubMissing(i)).length;
    expect(missing).toBe(14);
    // Listed: 150 deliveries and 2 redeliveries in the window (the 2 older ones are past it).
    expect(report).toMatchObject({
      outcome: 'complete',
      listed: 152,
      filled: missing - firstPage,
      present: 152 - (missing - firstPage),
      deliveryFailures: 1,
      watermark: at(MINUTE),
    });
    // Two list pages, then one detail per GUID the inbox lacked: the missing and the made-up-id copy.
    const lists = github.requests.filter((r) => r.path.endsWith('/deliveries'));
    const details = github.requests.filter((r) => !r.path.endsWith('/deliveries'));
    expect(lists).toHaveLength(2);
    expect(details).toHaveLength(missing - firstPage + 1);
    expect(report.apiCalls).toBe(github.requests.length);
    // 135 received + 14 reconciled, the made-up-id copy still the only row of issue 50.
    expect(await inbox('gh')).toEqual({ total: 150, reconciled: 14 });
    const fifty = await db.pool.query(
      `SELECT event_id, received_via FROM hookgate.inbox WHERE endpoint = 'gh' AND (payload #>> '{issue,number}')::int = 50`,
    );
    expect(fifty.rows).toEqual([{ event_id: expect.stringMatching(/^made-up-/), received_via: null }]);
    expect(await stateOf('gh')).toMatchObject({
      lastOutcome: 'complete',
      missingTotal: 14,
      last: { deliveryFailures: 1 },
    });
  }, 60_000);
});

describe('reconcile: Paddle', () => {
  it('pages newest first by id, stops on a failing page without moving the watermark, then fills the rest after a 429', async () => {
    // Page 1: the 200 newest (i 249–50); page 2 (after=…) fails.
    paddle.failWhere((url) => url.searchParams.has('after'));
    const failed = await run('pad');
    paddle.failWhere(null);
    const firstPage = paddleEvents.filter((_, i) => paddleMissing(i) && i >= 50).length;
    expect(failed).toMatchObject({ outcome: 'failed', listed: 200, filled: firstPage, watermark: null });
    expect(failed.error).toMatch(/^replay_fetch_failed: Paddle list events at .* failed: 500/);

    paddle.requests.length = 0;
    paddle.rateLimitNext(1);
    const report = await run('pad');
    expect(report).toMatchObject({
      outcome: 'complete',
      listed: 250,
      filled: 10 - firstPage,
      present: 240 + firstPage,
      deliveryFailures: 0,
      apiCalls: 3,
      watermark: at(MINUTE),
    });
    expect(paddle.requests.map((r) => [r.status, r.query.get('order_by'), r.authorization])).toEqual([
      [429, 'id[DESC]', 'Bearer pdl_test'],
      [200, 'id[DESC]', 'Bearer pdl_test'],
      [200, 'id[DESC]', 'Bearer pdl_test'],
    ]);
    expect(await inbox('pad')).toEqual({ total: 250, reconciled: 10 });
  }, 60_000);
});

describe('reconcile metrics', () => {
  it('report, per endpoint, the missing found in total, the last complete run and the watermark, from the table', async () => {
    const registry = new Registry();
    const staleAfter = 3_600_000;
    registerReconcileMetrics(registry, {
      db: db.pool,
      endpoints: ['pay', 'paybudget', 'gh', 'never'].map((name) => ({ name, staleAfter })),
    });
    const text = await registry.metrics();
    const value = (metric: string, endpoint: string) =>
      Number(new RegExp(`^${metric}\\{endpoint="${endpoint}"\\} (\\S+)$`, 'm').exec(text)?.[1]);
    expect(value('hookgate_reconcile_missing_total', 'pay')).toBe(20);
    expect(value('hookgate_reconcile_missing_total', 'paybudget')).toBe(161 + 59);
    expect(value('hookgate_reconcile_missing_total', 'gh')).toBe(14);
    expect(value('hookgate_reconcile_gap_free_until_timestamp_seconds', 'pay')).toBe((NOW - MINUTE) / 1000);
    expect(value('hookgate_reconcile_gap_free_until_timestamp_seconds', 'paybudget')).toBe(
      (NOW - 4 * HOUR) / 1000,
    );
    const lastSuccess = (await stateOf('pay'))!.lastSuccessAt!.getTime() / 1000;
    expect(value('hookgate_reconcile_last_success_timestamp_seconds', 'pay')).toBe(lastSuccess);
    // Configured but never run: reported as 0, so the not-succeeding alert sees it.
    expect(value('hookgate_reconcile_missing_total', 'never')).toBe(0);
    expect(value('hookgate_reconcile_last_success_timestamp_seconds', 'never')).toBe(0);
    expect(value('hookgate_reconcile_gap_free_until_timestamp_seconds', 'never')).toBe(0);
    expect(value('hookgate_reconcile_stale_after_seconds', 'gh')).toBe(3600);
    expect(text).toContain('# TYPE hookgate_reconcile_missing_total counter');
  });
});
