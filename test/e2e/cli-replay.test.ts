import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseConfig } from '../../services/core/config/load.ts';
import { runCliInProcess } from '../support/cli.ts';
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
import {
  Claimer,
  FAST_WORKER,
  startTestWorker,
  type TestWorker,
  waitFor,
  writeConfigFile,
} from '../support/worker-harness.ts';

// `hookgate replay` after an outage: 250 events in the window over 3 pages, 240 already in the
// inbox → 10 new, each applied once, flagged as replayed; the fake APIs page like the real ones
// and answer one 429, which is waited out.
let db: TestDatabase;
let stripe: FakeApi;
let github: FakeApi;
let worker: TestWorker;
let claimer: Claimer;
let configFile: string;

const handler = `sql:INSERT INTO public.dispatches (endpoint, event_id) VALUES ($1::jsonb->>'endpoint', $1::jsonb->>'event_id')`;
const now = Math.floor(Date.now() / 1000);
const stripeEvents: StripeEventObject[] = Array.from({ length: 250 }, (_, i) => ({
  id: `evt_replay_${String(i).padStart(3, '0')}`,
  object: 'event',
  type: 'invoice.created',
  created: now - 60 - i * 20,
  data: { object: { id: `in_${i}`, object: 'invoice' } },
}));
const guids = Array.from({ length: 250 }, () => randomUUID());
const githubDeliveries: GithubDelivery[] = [
  ...guids.map((guid, i) => ({
    id: 1000 + i,
    guid,
    deliveredAt: new Date((now - 60 - i * 20) * 1000),
    event: 'issues',
    action: 'opened',
    payload: { action: 'opened', issue: { number: i } },
  })),
  // Two redeliveries (same GUID, new delivery id) of events that are missing: one effect each.
  ...[0, 1].map((i) => ({
    id: 5000 + i,
    guid: guids[i]!,
    deliveredAt: new Date((now - 30) * 1000),
    event: 'issues',
    action: 'opened',
    payload: { action: 'opened', issue: { number: i } },
    redelivery: true,
  })),
  // Before the window: never fetched in detail, and paging stops there.
  ...[0, 1, 2].map((i) => ({
    id: 100 + i,
    guid: randomUUID(),
    deliveredAt: new Date((now - 5 * 3600) * 1000),
    event: 'issues',
    action: 'closed',
    payload: { action: 'closed', issue: { number: 900 + i } },
  })),
];

beforeAll(async () => {
  db = await createTestDatabase();
  await db.pool.query(
    `CREATE TABLE public.dispatches (seq bigserial PRIMARY KEY, endpoint text NOT NULL, event_id text NOT NULL)`,
  );
  stripe = await startFakeStripeEvents(stripeEvents);
  github = await startFakeGithubDeliveries('acme/shop', 42, githubDeliveries);
  const document = {
    claim: { maxWait: '2ms' },
    worker: FAST_WORKER,
    endpoints: {
      pay: { provider: 'stripe', secrets: [STRIPE_SECRET], handler, replay: { apiBase: stripe.url } },
      gh: {
        provider: 'github',
        secrets: ['github-secret-for-tests'],
        handler,
        replay: { apiBase: github.url, repository: 'acme/shop', hookId: 42 },
      },
    },
  };
  configFile = writeConfigFile(document);
  const config = parseConfig(document, {});
  worker = await startTestWorker(db.url, config);
  claimer = await Claimer.start(db.url, config);
  // Before the outage: all but the 10 newest of each were received.
  await claimer.claim(
    'pay',
    stripeEvents.slice(10).map((event) => ({ eventId: event.id })),
  );
  await claimer.claim(
    'gh',
    guids.slice(10).map((guid) => ({ eventId: guid })),
  );
  await waitFor('the 480 received events applied', async () => (await dispatched()) === 480, 120_000);
}, 180_000);

afterAll(async () => {
  await claimer?.stop();
  await worker?.stop();
  await stripe?.close();
  await github?.close();
  await db?.drop();
});

async function dispatched(): Promise<number> {
  return (await db.pool.query('SELECT count(*)::int AS n FROM public.dispatches')).rows[0].n;
}

async function perEvent(endpoint: string): Promise<Map<string, number>> {
  const result = await db.pool.query<{ event_id: string; n: number }>(
    'SELECT event_id, count(*)::int AS n FROM public.dispatches WHERE endpoint = $1 GROUP BY event_id',
    [endpoint],
  );
  return new Map(result.rows.map((row) => [row.event_id, row.n]));
}

async function inbox(endpoint: string) {
  const result = await db.pool.query<{ total: number; replayed: number }>(
    `SELECT count(*)::int AS total, count(*) FILTER (WHERE received_via = 'api_replay')::int AS replayed
       FROM hookgate.inbox WHERE endpoint = $1`,
    [endpoint],
  );
  return result.rows[0]!;
}

const jsonOf = (output: string) => JSON.parse(output.slice(output.indexOf('{')));

describe('hookgate replay', () => {
  it('Stripe: 250 events over 3 pages, 240 present → 10 new, each applied once; a 429 is waited out', async () => {
    const env = { DATABASE_URL: db.url, STRIPE_API_KEY: 'rk_test_replay', LOG_LEVEL: 'warn' };
    const dry = await runHookgate(
      ['replay', '--endpoint', 'pay', '--since', '3h', '--dry-run', '--json', '--config', configFile],
      {
        env,
      },
    );
    expect(dry.code, dry.output).toBe(0);
    expect(jsonOf(dry.output)).toMatchObject({ dry_run: true, fetched: 250, new: 10, already_present: 240 });
    expect(await inbox('pay')).toEqual({ total: 240, replayed: 0 });

    stripe.requests.length = 0;
    stripe.rateLimitNext(1);
    const run = await runHookgate(
      ['replay', '--endpoint', 'pay', '--since', '3h', '--json', '--config', configFile],
      {
        env,
      },
    );
    expect(run.code, run.output).toBe(0);
    expect(jsonOf(run.output)).toMatchObject({ fetched: 250, new: 10, already_present: 240, unusable: 0 });
    // Paging like the API: a 429 first, waited out (Retry-After: 1), then 3 pages by starting_after.
    const [limited, ...pages] = stripe.requests;
    expect(limited?.status).toBe(429);
    expect(pages.map((r) => r.status)).toEqual([200, 200, 200]);
    expect(pages[0]!.at - limited!.at).toBeGreaterThanOrEqual(900);
    expect(pages.map((r) => r.query.get('starting_after'))).toEqual([
      null,
      'evt_replay_099',
      'evt_replay_199',
    ]);
    expect(pages[0]!.query.get('created[gte]')).toMatch(/^\d+$/);
    expect(pages[0]!.authorization).toBe('Bearer rk_test_replay');

    await waitFor('the 10 new events applied', async () => (await dispatched()) === 490, 60_000);
    const counts = await perEvent('pay');
    expect(counts.size).toBe(250);
    expect([...counts.values()].every((n) => n === 1)).toBe(true);
    expect(await inbox('pay')).toEqual({ total: 250, replayed: 10 });
    // Replayed events are not deliveries: the duplicate rate's counts are untouched.
    const delivered = await db.pool.query(
      `SELECT sum(accepted)::int AS accepted, sum(duplicate)::int AS duplicate FROM hookgate.delivery_counts WHERE endpoint = 'pay'`,
    );
    expect(delivered.rows[0]).toEqual({ accepted: 240, duplicate: 0 });

    // Run again: everything is present now.
    const again = await runHookgate(
      ['replay', '--endpoint', 'pay', '--since', '3h', '--json', '--config', configFile],
      {
        env,
      },
    );
    expect(jsonOf(again.output)).toMatchObject({ fetched: 250, new: 0, already_present: 250 });
  }, 120_000);

  it('GitHub: deliveries over 3 pages, 240 present → 10 new, redeliveries absorbed, a 429 waited out', async () => {
    const env = { DATABASE_URL: db.url, GITHUB_TOKEN: 'ghp_test_replay', LOG_LEVEL: 'warn' };
    github.requests.length = 0;
    github.rateLimitNext(1);
    const run = await runHookgate(
      ['replay', '--endpoint', 'gh', '--since', '3h', '--json', '--config', configFile],
      {
        env,
      },
    );
    expect(run.code, run.output).toBe(0);
    expect(jsonOf(run.output)).toMatchObject({ fetched: 252, new: 10, already_present: 242, unusable: 0 });
    const lists = github.requests.filter((r) => r.path === '/repos/acme/shop/hooks/42/deliveries');
    expect(lists[0]?.status).toBe(429);
    expect(lists.filter((r) => r.status === 200)).toHaveLength(3);
    // The deliveries before the window were not fetched one by one.
    expect(github.requests.some((r) => /\/deliveries\/10[0-2]$/.test(r.path))).toBe(false);
    expect(github.requests[1]!.authorization).toBe('token ghp_test_replay');

    await waitFor('the 10 new GitHub events applied', async () => (await dispatched()) === 500, 60_000);
    const counts = await perEvent('gh');
    expect(counts.size).toBe(250);
    expect([...counts.values()].every((n) => n === 1)).toBe(true);
    expect(await inbox('gh')).toEqual({ total: 250, replayed: 10 });
  }, 120_000);

  it('refuses what it cannot do: no credential, a bad window', async () => {
    const env = { DATABASE_URL: db.url, STRIPE_API_KEY: '' };
    // Refusals before any request: on the real program in this process.
    const none = await runCliInProcess(
      ['replay', '--endpoint', 'pay', '--since', '1h', '--config', configFile],
      env,
    );
    expect(none.code).toBe(2);
    expect(none.output).toMatch(/credentials_missing: Set STRIPE_API_KEY/);
    const backwards = await runCliInProcess(
      ['replay', '--endpoint', 'pay', '--since', '1h', '--until', '2h', '--config', configFile],
      { ...env, STRIPE_API_KEY: 'rk' },
    );
    expect(backwards.code).toBe(2);
    expect(backwards.output).toMatch(/--until must be after --since/);
  });
});
