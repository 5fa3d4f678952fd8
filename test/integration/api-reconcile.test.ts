import { createHash, randomBytes, randomUUID } from 'node:crypto';
import type { PgBoss } from 'pg-boss';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type RunningConsole, startConsole } from '../../services/console/server.ts';
import { parseConfig } from '../../services/core/config/load.ts';
import { applyRoles } from '../../services/core/db/roles.ts';
import { createBoss } from '../../services/core/queue/boss.ts';
import { ensureQueues, retryPolicyFrom } from '../../services/core/queue/queues.ts';
import { ensureReconcileQueue } from '../../services/core/reconcile/schedule.ts';
import { startReconciler } from '../../services/worker/reconciler.ts';
import { type ApiClient, apiClient } from '../support/api-client.ts';
import { silentLogger } from '../support/apply.ts';
import { createTestDatabase, type TestDatabase } from '../support/database.ts';
import {
  type FakeApi,
  type StripeEventObject,
  startFakeStripeEvents,
} from '../support/fake-provider-apis.ts';
import { STRIPE_SECRET } from '../support/gateway.ts';

// A reconciliation run started through the API is queued for the workers, who hold the provider's
// credentials (the console needs none), by a console logged in as the least-privileged
// `hookgate_console` role (which writes no table of pg-boss's: it queues through
// hookgate.request_reconcile_run): the worker's reconciler takes it, runs it against a fake Stripe
// API (10 events, none received), and records it as the caller's (`reconcile` by api:ci, with what
// it filled), beside the API's own `reconcile start`; GET /reconcile shows how it ended.

const TOKEN = randomBytes(24).toString('base64url');
const created = Math.floor(Date.now() / 1000);
const events: StripeEventObject[] = Array.from({ length: 10 }, (_, i) => ({
  id: `evt_api_rec_${i}`,
  object: 'event',
  type: 'invoice.created',
  created: created - 600 - i * 60,
  pending_webhooks: 0,
  data: { object: { id: `in_${i}`, object: 'invoice' } },
}));

let db: TestDatabase;
let boss: PgBoss;
/** The console's own pg-boss, logged in as its role (as `serve --role console` makes it). */
let consoleBoss: PgBoss;
let stripe: FakeApi;
let running: RunningConsole;
let reconciler: { stop(): Promise<void> } | undefined;
let ops: ApiClient;
let config: ReturnType<typeof parseConfig>;

beforeAll(async () => {
  db = await createTestDatabase();
  const client = await db.pool.connect();
  try {
    await applyRoles(client, true);
  } finally {
    client.release();
  }
  const login = `hgapirec_${randomBytes(4).toString('hex')}`;
  await db.pool.query(`CREATE ROLE ${login} LOGIN PASSWORD 'api-reconcile-test' IN ROLE hookgate_console`);
  const consoleUrl = new URL(db.url);
  consoleUrl.username = login;
  consoleUrl.password = 'api-reconcile-test';
  stripe = await startFakeStripeEvents(events);
  config = parseConfig(
    {
      endpoints: {
        pay: {
          provider: 'stripe',
          secrets: [STRIPE_SECRET],
          replay: { apiBase: stripe.url },
          reconcile: { since: '2h', settle: '1m', budget: 10, every: '1d' },
        },
      },
      console: {
        port: 0,
        sessionSecret: 'api-reconcile-test-session-secret-0123456789',
        tokens: [{ name: 'ci', sha256: createHash('sha256').update(TOKEN).digest('hex') }],
      },
    },
    {},
  );
  boss = createBoss({ connectionString: db.url, max: 3, supervise: false, applicationName: 'api-reconcile' });
  boss.on('error', () => {});
  await boss.start();
  await ensureQueues(boss, ['pay'], retryPolicyFrom(config.worker));
  await ensureReconcileQueue(boss);
  consoleBoss = createBoss({
    connectionString: consoleUrl.toString(),
    max: 1,
    supervise: false,
    applicationName: 'api-reconcile-console',
  });
  consoleBoss.on('error', () => {});
  await consoleBoss.start();
  running = await startConsole({
    config,
    databaseUrl: consoleUrl.toString(),
    boss: consoleBoss,
    logger: silentLogger,
    embedded: false,
    env: {},
  });
  ops = apiClient(running.url, TOKEN);
});

afterAll(async () => {
  await reconciler?.stop();
  await running?.stop();
  await consoleBoss?.stop({ graceful: false, close: true });
  await boss?.stop({ graceful: false, close: true });
  await stripe?.close();
  await db?.drop();
});

describe('a reconciliation run started through the API', () => {
  it('is queued, run by a worker with the credentials, and recorded as the caller’s', async () => {
    const started = await ops.POST('/endpoints/{endpoint}/reconcile', {
      params: { path: { endpoint: 'pay' }, header: { 'Idempotency-Key': randomUUID() } },
      body: { since: '2h' },
    });
    expect(started.response.status).toBe(202);
    const jobId = started.data?.job_id;
    expect(jobId).toMatch(/^[0-9a-f-]{36}$/);
    // Asked again while it waits: nothing more is queued; the answer names the waiting run.
    const again = await ops.POST('/endpoints/{endpoint}/reconcile', {
      params: { path: { endpoint: 'pay' }, header: { 'Idempotency-Key': randomUUID() } },
    });
    expect([again.response.status, again.data?.count, again.data?.job_id]).toEqual([200, 0, jobId]);
    expect((await ops.GET('/reconcile')).data?.items[0]).toMatchObject({ endpoint: 'pay', waiting: true });

    // The worker's part, with the credential the console never had.
    reconciler = await startReconciler({
      config,
      pool: db.pool,
      boss,
      logger: silentLogger,
      env: { STRIPE_API_KEY: 'sk_test_fake' },
    });
    let audit: Array<{ command: string; count: number; dry_run: boolean; filters: Record<string, unknown> }> =
      [];
    for (let n = 0; n < 600 && !audit.some((row) => row.command === 'reconcile'); n += 1) {
      await new Promise((resolve) => setTimeout(resolve, 100));
      audit =
        (await ops.GET('/audit', { params: { query: { actor: 'api:ci', limit: 10 } } })).data?.items ?? [];
    }
    expect(audit.map((row) => [row.command, row.count, row.dry_run])).toEqual([
      ['reconcile', 10, false],
      ['reconcile start', 0, false],
      ['reconcile start', 1, false],
    ]);
    expect(audit[0]?.filters).toMatchObject({ outcome: 'complete', listed: 10 });
    // (A scheduled run may be queued behind it by then: the workers' own, recorded by nobody.)
    expect((await ops.GET('/reconcile')).data?.items[0]).toMatchObject({
      last_outcome: 'complete',
      runs_total: expect.any(Number),
    });
    const inbox = await db.pool.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM hookgate.inbox WHERE endpoint = 'pay' AND received_via = 'api_reconcile'`,
    );
    expect(inbox.rows[0]!.n).toBe(10);
  });
});
