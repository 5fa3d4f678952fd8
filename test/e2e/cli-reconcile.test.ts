import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseConfig } from '../../services/core/config/load.ts';
import { createTestDatabase, type TestDatabase } from '../support/database.ts';
import {
  type FakeApi,
  type StripeEventObject,
  startFakeStripeEvents,
} from '../support/fake-provider-apis.ts';
import { STRIPE_SECRET } from '../support/gateway.ts';
import { runHookgate } from '../support/process.ts';
import { Claimer, writeConfigFile } from '../support/worker-harness.ts';

// `hookgate reconcile` and `hookgate reconcile status` as processes, against a fake Stripe API:
// 30 events in the last 40 minutes, 25 received, 5 found missing and filled once.
let db: TestDatabase;
let stripe: FakeApi;
let claimer: Claimer;
let configFile: string;

const now = Math.floor(Date.now() / 1000);
const events: StripeEventObject[] = Array.from({ length: 30 }, (_, i) => ({
  id: `evt_cli_rec_${i}`,
  object: 'event',
  type: 'invoice.created',
  created: now - 600 - i * 60,
  pending_webhooks: i < 5 ? 1 : 0,
  data: { object: { id: `in_${i}`, object: 'invoice' } },
}));

beforeAll(async () => {
  db = await createTestDatabase();
  stripe = await startFakeStripeEvents(events);
  const document = {
    claim: { maxWait: '2ms' },
    endpoints: {
      pay: {
        provider: 'stripe',
        secrets: [STRIPE_SECRET],
        replay: { apiBase: stripe.url },
        reconcile: { since: '2h', settle: '1m', budget: 10 },
      },
      plain: { provider: 'stripe', secrets: [STRIPE_SECRET] },
    },
  };
  configFile = writeConfigFile(document);
  claimer = await Claimer.start(db.url, parseConfig(document, {}));
  // The 5 newest never arrived (their deliveries failed at Stripe: pending_webhooks 1).
  await claimer.claim(
    'pay',
    events.slice(5).map((event) => ({ eventId: event.id, body: event })),
  );
}, 120_000);

afterAll(async () => {
  await claimer?.stop();
  await stripe?.close();
  await db?.drop();
});

const env = () => ({ DATABASE_URL: db.url, STRIPE_API_KEY: 'rk_test_reconcile', LOG_LEVEL: 'warn' });
const jsonOf = (output: string) => JSON.parse(output.slice(output.indexOf('{')));

async function inbox() {
  const { rows } = await db.pool.query<{ total: number; reconciled: number }>(
    `SELECT count(*)::int AS total, count(*) FILTER (WHERE received_via = 'api_reconcile')::int AS reconciled
       FROM hookgate.inbox WHERE endpoint = 'pay'`,
  );
  return rows[0]!;
}

describe('hookgate reconcile', () => {
  it('dry run, run, status, run again: 5 found and filled once, the watermark at now − settle', async () => {
    const dry = await runHookgate(
      ['reconcile', '--endpoint', 'pay', '--dry-run', '--json', '--config', configFile],
      { env: env() },
    );
    expect(dry.code, dry.output).toBe(0);
    expect(jsonOf(dry.output)).toMatchObject({
      dry_run: true,
      outcome: 'complete',
      listed: 30,
      present: 25,
      filled: 5,
      delivery_failures: 5,
      // Two windows of an hour (reconcile.window), one page each.
      api_calls: 2,
      gap_free_until: null,
    });
    expect(await inbox()).toEqual({ total: 25, reconciled: 0 });

    const started = Date.now();
    const run = await runHookgate(['reconcile', '--endpoint', 'pay', '--json', '--config', configFile], {
      env: env(),
    });
    expect(run.code, run.output).toBe(0);
    const report = jsonOf(run.output);
    expect(report).toMatchObject({ dry_run: false, outcome: 'complete', listed: 30, present: 25, filled: 5 });
    // The watermark: the run's start minus settle (1m), in whole seconds.
    const watermark = Date.parse(report.gap_free_until);
    expect(watermark).toBeLessThanOrEqual(Date.now() - 60_000);
    expect(watermark).toBeGreaterThanOrEqual(Math.floor(started / 1000) * 1000 - 61_000);
    expect(await inbox()).toEqual({ total: 30, reconciled: 5 });

    const status = await runHookgate(['reconcile', 'status', '--json', '--config', configFile], {
      env: env(),
    });
    expect(status.code, status.output).toBe(0);
    expect(jsonOf(status.output).endpoints).toEqual([
      expect.objectContaining({
        endpoint: 'pay',
        gap_free_until: report.gap_free_until,
        last_outcome: 'complete',
        last_listed: 30,
        last_present: 25,
        last_filled: 5,
        last_delivery_failures: 5,
        last_api_calls: 2,
        missing_total: 5,
        runs_total: 1,
        running: false,
      }),
    ]);
    const table = await runHookgate(['reconcile', 'status', '--config', configFile], { env: env() });
    expect(table.output).toMatch(/GAP-FREE-UNTIL/);
    expect(table.output).toMatch(/pay\s+\S+Z\s+\S+Z\s+complete\s+30\s+25\s+5\s+5\s+2\s+5/);

    // hookgate stats shows it too.
    const stats = await runHookgate(['stats', '--json', '--config', configFile], { env: env() });
    expect(jsonOf(stats.output).reconcile).toEqual([
      { endpoint: 'pay', gap_free_until: report.gap_free_until, last_success_at: expect.any(String) },
    ]);
    const statsText = await runHookgate(['stats', '--config', configFile], { env: env() });
    expect(statsText.output).toContain(`pay: gap-free until ${report.gap_free_until}`);

    const again = await runHookgate(['reconcile', '--endpoint', 'pay', '--json', '--config', configFile], {
      env: env(),
    });
    expect(jsonOf(again.output)).toMatchObject({ outcome: 'complete', filled: 0, present: 30 });
    expect(await inbox()).toEqual({ total: 30, reconciled: 5 });
  }, 120_000);

  it('audits every operator run, dry or not: actor, command, filters, count', async () => {
    await db.pool.query(`DELETE FROM hookgate.audit WHERE command = 'reconcile'`);
    const since = new Date(Date.now() - 3 * 3_600_000).toISOString();
    const dry = await runHookgate(
      [
        'reconcile',
        '--endpoint',
        'pay',
        '--dry-run',
        '--since',
        since,
        '--actor',
        'sre-alice',
        '--config',
        configFile,
      ],
      { env: env() },
    );
    expect(dry.code, dry.output).toBe(0);
    const run = await runHookgate(['reconcile', '--endpoint', 'pay', '--json', '--config', configFile], {
      env: { ...env(), HOOKGATE_ACTOR: 'sre-bob' },
    });
    expect(run.code, run.output).toBe(0);
    const { rows } = await db.pool.query(
      `SELECT actor, command, endpoint, filters, count::int AS count, dry_run FROM hookgate.audit
        WHERE command = 'reconcile' ORDER BY id`,
    );
    expect(rows).toEqual([
      {
        actor: 'sre-alice',
        command: 'reconcile',
        endpoint: 'pay',
        filters: expect.objectContaining({ since, listed: expect.any(Number), outcome: 'complete' }),
        count: expect.any(Number),
        dry_run: true,
      },
      {
        actor: 'sre-bob',
        command: 'reconcile',
        endpoint: 'pay',
        filters: expect.objectContaining({
          outcome: 'complete',
          from: expect.any(String),
          until: expect.any(String),
        }),
        count: jsonOf(run.output).filled,
        dry_run: false,
      },
    ]);
    expect(rows[1].filters).not.toHaveProperty('since');
    const audit = await runHookgate(['audit', '--command', 'reconcile', '--json', '--config', configFile], {
      env: env(),
    });
    expect(audit.code, audit.output).toBe(0);
    expect(audit.output).toContain('sre-alice');
    expect(audit.output).toContain('sre-bob');
  }, 120_000);

  it('refuses an endpoint without a reconcile section, and an unknown action (exit 2)', async () => {
    const refused = await runHookgate(['reconcile', '--endpoint', 'plain', '--config', configFile], {
      env: env(),
    });
    expect(refused.code).toBe(2);
    expect(refused.output).toMatch(/usage_invalid: Endpoint plain does not reconcile/);
    const action = await runHookgate(['reconcile', 'stats', '--config', configFile], { env: env() });
    expect(action.code).toBe(2);
    expect(action.output).toMatch(/usage_invalid: "stats" is not an action of reconcile/);
  });
});
