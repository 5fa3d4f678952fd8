import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseConfig } from '../../services/core/config/load.ts';
import { createTestDatabase, type TestDatabase } from '../support/database.ts';
import {
  type FakeApi,
  type GithubDelivery,
  type StripeEventObject,
  startFakeGithubDeliveries,
  startFakeStripeEvents,
} from '../support/fake-provider-apis.ts';
import { STRIPE_SECRET } from '../support/gateway.ts';
import { runHookgate } from '../support/process.ts';
import { Claimer, writeConfigFile } from '../support/worker-harness.ts';

// The figures of one first run at a realistic size, as `hookgate reconcile --json` reports them
// (printed for docs/reconcile.md): a day of Stripe events, one every 6 s (14,400), and GitHub's
// 3 days of one webhook's deliveries, one every 89 s (2,880), 1 % of each never received. The
// counts are asserted; the time is printed, never asserted.
let db: TestDatabase;
let stripe: FakeApi;
let github: FakeApi;
let claimer: Claimer;
let configFile: string;

const now = Math.floor(Date.now() / 1000);
const stripeEvents: StripeEventObject[] = Array.from({ length: 14_400 }, (_, i) => ({
  id: `evt_fig_${i}`,
  object: 'event',
  type: 'invoice.paid',
  created: now - 120 - i * 6,
  pending_webhooks: i % 100 === 50 ? 1 : 0,
  data: { object: { id: `in_${i}`, object: 'invoice', amount_paid: 1000 + i } },
}));
const guids = Array.from({ length: 2_880 }, () => randomUUID());
const deliveries: GithubDelivery[] = guids.map((guid, i) => ({
  id: 10_000 + i,
  guid,
  deliveredAt: new Date((now - 120 - i * 89) * 1000),
  event: 'issues',
  action: 'opened',
  payload: { action: 'opened', issue: { number: i }, repository: { id: 1 } },
  ...(i % 100 === 50 ? { statusCode: 502 } : {}),
}));
const missing = (i: number) => i % 100 === 50;

beforeAll(async () => {
  db = await createTestDatabase();
  stripe = await startFakeStripeEvents(stripeEvents);
  github = await startFakeGithubDeliveries('acme/shop', 7, deliveries);
  const document = {
    claim: { maxWait: '2ms' },
    endpoints: {
      pay: {
        provider: 'stripe',
        secrets: [STRIPE_SECRET],
        replay: { apiBase: stripe.url },
        reconcile: { since: '25h', settle: '1m', window: '1h', budget: 1000 },
      },
      gh: {
        provider: 'github',
        secrets: ['github-secret-for-tests'],
        replay: { apiBase: github.url, repository: 'acme/shop', hookId: 7 },
        reconcile: { since: '3d', settle: '1m', budget: 1000 },
      },
    },
  };
  configFile = writeConfigFile(document);
  claimer = await Claimer.start(db.url, parseConfig(document, {}));
  await claimer.claim(
    'pay',
    stripeEvents.filter((_, i) => !missing(i)).map((event) => ({ eventId: event.id, body: event })),
  );
  await claimer.claim(
    'gh',
    guids.filter((_, i) => !missing(i)).map((guid) => ({ eventId: guid })),
  );
}, 300_000);

afterAll(async () => {
  await claimer?.stop();
  await stripe?.close();
  await github?.close();
  await db?.drop();
});

const jsonOf = (output: string) => JSON.parse(output.slice(output.indexOf('{')));

async function reconcile(endpoint: string) {
  const run = await runHookgate(['reconcile', '--endpoint', endpoint, '--json', '--config', configFile], {
    env: { DATABASE_URL: db.url, STRIPE_API_KEY: 'rk_fig', GITHUB_TOKEN: 'ghp_fig', LOG_LEVEL: 'warn' },
  });
  expect(run.code, run.output).toBe(0);
  const report = jsonOf(run.output);
  console.info(`reconcile figures ${endpoint}: ${JSON.stringify(report)}`);
  return report;
}

describe('reconcile figures', () => {
  it('Stripe, a day of events: 14,400 listed, 144 missing filled, one request per page', async () => {
    const report = await reconcile('pay');
    expect(report).toMatchObject({ outcome: 'complete', listed: 14_400, present: 14_256, filled: 144 });
    expect(report.delivery_failures).toBe(144);
    expect(report.api_calls).toBe(stripe.requests.length);
  }, 300_000);

  it('GitHub, 3 days of deliveries: 2,880 listed, 29 missing fetched and filled, the rest never fetched', async () => {
    const report = await reconcile('gh');
    const filled = guids.filter((_, i) => missing(i)).length;
    expect(report).toMatchObject({ outcome: 'complete', listed: 2_880, present: 2_880 - filled, filled });
    // 29 list pages (100 per page) and one detail per missing delivery.
    expect(report.api_calls).toBe(29 + filled);
    expect(report.api_calls).toBe(github.requests.length);
  }, 300_000);
});
