import { Registry } from 'prom-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Config } from '../../services/core/config/schema.ts';
import { pauseDestination, redeliver, resumeDestination } from '../../services/core/destinations/actions.ts';
import { registerDestinationGauges } from '../../services/core/destinations/metrics.ts';
import { routesFrom } from '../../services/core/destinations/routes.ts';
import { createLogger } from '../../services/core/logging.ts';
import {
  createDestinationMetrics,
  createDestinationSender,
  type DestinationSender,
} from '../../services/worker/destinations.ts';
import { runCliInProcess } from '../support/cli.ts';
import { createTestDatabase, type TestDatabase } from '../support/database.ts';
import { type FakeDownstream, startFakeDownstream } from '../support/fake-downstream.ts';
import {
  Claimer,
  startTestWorker,
  type TestWorker,
  waitFor,
  workerConfig,
  workerConfigDocument,
  writeConfigFile,
} from '../support/worker-harness.ts';

// The operators' actions on destinations, against a running worker and the relay's passes (one
// at a time, `runOnce`, so what a pass did not send is known once the pass is over): pause holds
// and resume releases (no attempt burned), redeliver sends dead and delivered deliveries again
// with the same webhook-id, the dead gauge follows the rows; and the CLI commands over the same
// functions.

const RETRY = { limit: 1, backoff: '100ms', max: '100ms', jitter: 0 };
const ENDPOINTS = (url: string) => ({
  pay: {
    handler: 'record',
    destinations: {
      paused: { url: `${url}/paused`, retry: RETRY },
      refusing: { url: `${url}/refusing`, retry: RETRY },
      healthy: { url: `${url}/healthy`, retry: RETRY },
    },
  },
});

let db: TestDatabase;
let downstream: FakeDownstream;
let claimer: Claimer;
let worker: TestWorker;
let sender: DestinationSender;
let config: Config;
let configFile: string;
const registry = new Registry();

async function rows(destination: string) {
  const { rows: found } = await db.pool.query<{
    id: string;
    event_id: string;
    status: string;
    attempts: number;
    webhook_id: string;
  }>(
    `SELECT id::text AS id, event_id, status, attempts, webhook_id FROM hookgate.destination_deliveries
      WHERE destination = $1 ORDER BY event_id`,
    [destination],
  );
  return found;
}

/** One pass of the relay for each destination: whatever is due is sent and recorded. */
async function passAll(): Promise<Record<string, number>> {
  const sent: Record<string, number> = {};
  for (const destination of ['paused', 'refusing', 'healthy']) {
    sent[destination] = (await sender.runOnce('pay', destination)).attempts.length;
  }
  return sent;
}

async function settled(destination: string, count: number, status: string) {
  const found = await rows(destination);
  expect(found.map((row) => row.status)).toEqual(Array(count).fill(status));
  return found;
}

const requestsTo = (path: string) => downstream.requests.filter((r) => r.path === path);

async function gauge(destination: string, status: string): Promise<number | undefined> {
  const metric = await registry.getSingleMetric('hookgate_destination_stuck_deliveries')?.get();
  return metric?.values.find((v) => v.labels.destination === destination && v.labels.status === status)
    ?.value;
}

beforeAll(async () => {
  db = await createTestDatabase();
  downstream = await startFakeDownstream();
  downstream.fallback = { status: 200 };
  config = workerConfig(ENDPOINTS(downstream.url));
  configFile = writeConfigFile(workerConfigDocument(ENDPOINTS(downstream.url)));
  claimer = await Claimer.start(db.url, config);
  worker = await startTestWorker(db.url, config);
  registerDestinationGauges(registry, { db: db.pool, routes: routesFrom(config), cacheMs: 0 });
  sender = createDestinationSender({
    pool: worker.pool,
    routes: routesFrom(config),
    logger: createLogger('silent'),
    metrics: createDestinationMetrics(registry),
  });
});

afterAll(async () => {
  await sender?.close();
  await worker?.stop();
  await claimer?.stop();
  await downstream?.close();
  await db?.drop();
});

describe('destination operations', () => {
  it('pause holds deliveries without an attempt, resume releases every one', async () => {
    const paused = await pauseDestination(db.pool, config, { destination: 'paused', actor: 'test:alice' });
    expect(paused).toMatchObject({ endpoint: 'pay', destination: 'paused', count: 0, wasPaused: false });
    // Every 400 makes `refusing` dead at once (the next test redelivers them).
    downstream.script('/refusing', [400, 400, 400]);
    await claimer.claim(
      'pay',
      ['evt_1', 'evt_2', 'evt_3'].map((eventId) => ({ eventId, eventType: 'invoice.paid' })),
    );
    await waitFor('the deliveries to be written', async () =>
      (await rows('paused')).length === 3 && (await rows('healthy')).length === 3 ? true : null,
    );
    // A pass of every destination: the healthy one delivers all three, the paused one sends nothing.
    expect(await passAll()).toEqual({ paused: 0, refusing: 3, healthy: 3 });
    await settled('healthy', 3, 'delivered');
    const held = await settled('paused', 3, 'held');
    expect(held.map((row) => row.attempts)).toEqual([0, 0, 0]);
    expect(requestsTo('/paused')).toEqual([]);
    expect(await gauge('paused', 'held')).toBe(3);
    const { rows: state } = await db.pool.query(
      `SELECT paused, changed_by FROM hookgate.destination_state WHERE destination = 'paused'`,
    );
    expect(state).toEqual([{ paused: true, changed_by: 'test:alice' }]);

    const resumed = await resumeDestination(db.pool, config, { destination: 'paused', actor: 'test:alice' });
    expect(resumed).toMatchObject({ count: 3, wasPaused: true });
    expect(await passAll()).toEqual({ paused: 3, refusing: 0, healthy: 0 });
    const delivered = await settled('paused', 3, 'delivered');
    expect(delivered.map((row) => row.attempts)).toEqual([1, 1, 1]);
    expect(requestsTo('/paused')).toHaveLength(3);
    expect(await gauge('paused', 'held')).toBe(0);
  });

  it('dead deliveries stay dead (and counted) until redelivered with the same webhook-id, then delivered once', async () => {
    const dead = await settled('refusing', 3, 'dead');
    expect(requestsTo('/refusing')).toHaveLength(3);
    expect(await gauge('refusing', 'dead')).toBe(3);
    // Counted once its row is written, within the pass.
    const counted = await registry.getSingleMetric('hookgate_destination_deliveries_total')?.get();
    expect(
      counted?.values.find((v) => v.labels.destination === 'refusing' && v.labels.outcome === 'dead')?.value,
    ).toBe(3);

    const dry = await redeliver(db.pool, config, {
      destination: 'refusing',
      actor: 'test:bob',
      dryRun: true,
    });
    expect(dry).toMatchObject({
      count: 3,
      dryRun: true,
      ids: dead.map((row) => row.id).sort((a, b) => Number(a) - Number(b)),
    });
    expect((await rows('refusing')).every((row) => row.status === 'dead')).toBe(true);

    const done = await redeliver(db.pool, config, {
      destination: 'refusing',
      ids: [dead[0]!.id],
      actor: 'test:bob',
      dryRun: false,
    });
    expect(done).toMatchObject({ count: 1, ids: [dead[0]!.id], actor: 'test:bob' });
    expect(await passAll()).toEqual({ paused: 0, refusing: 1, healthy: 0 });
    const after = await rows('refusing');
    expect(after.map((row) => [row.status, row.attempts])).toEqual([
      ['delivered', 2],
      ['dead', 1],
      ['dead', 1],
    ]);
    const sent = requestsTo('/refusing').filter((r) => r.headers['webhook-id'] === dead[0]!.webhook_id);
    expect(sent).toHaveLength(2);
    expect(sent.map((r) => r.headers['idempotency-key'])).toEqual([dead[0]!.webhook_id, dead[0]!.webhook_id]);
    expect(await gauge('refusing', 'dead')).toBe(2);

    // Nothing else to take: a delivered id is redelivered only by id, dead only by status.
    const again = await redeliver(db.pool, config, {
      destination: 'refusing',
      ids: [dead[0]!.id],
      statuses: ['dead'],
      actor: 'test:bob',
      dryRun: true,
    });
    expect(again.count).toBe(0);

    // Every one of these actions is in the audit trail, dry runs too, with who and what.
    const audit = await db.pool.query<{ actor: string; command: string; count: number; dry_run: boolean }>(
      `SELECT actor, command, count::int AS count, dry_run FROM hookgate.audit
        WHERE command IN ('redeliver', 'destination pause', 'destination resume') ORDER BY id`,
    );
    expect(audit.rows).toEqual([
      { actor: 'test:alice', command: 'destination pause', count: 0, dry_run: false },
      { actor: 'test:alice', command: 'destination resume', count: 3, dry_run: false },
      { actor: 'test:bob', command: 'redeliver', count: 3, dry_run: true },
      { actor: 'test:bob', command: 'redeliver', count: 1, dry_run: false },
      { actor: 'test:bob', command: 'redeliver', count: 0, dry_run: true },
    ]);
  });

  it('the CLI lists, shows, redelivers and pauses through the same functions', async () => {
    const env = { DATABASE_URL: db.url, HOOKGATE_CONFIG: configFile };
    const list = await runCliInProcess(
      ['deliveries', 'list', '--destination', 'refusing', '--status', 'dead', '--json'],
      env,
    );
    expect(list.code, list.output).toBe(0);
    const listed = JSON.parse(list.stdout) as { id: string; status: string }[];
    expect(listed).toHaveLength(2);

    const show = await runCliInProcess(['deliveries', 'show', listed[0]!.id], env);
    expect(show.code, show.output).toBe(0);
    expect(show.stdout).toContain('status       dead, 1 attempt(s)');
    expect(show.stdout).toMatch(/1\s+\S+\s+\d+ms\s+400\s+HTTP 400/);

    const dry = await runCliInProcess(['redeliver', '--destination', 'refusing', '--dry-run'], env);
    expect(dry.code, dry.output).toBe(0);
    expect(dry.stdout).toContain('Would redeliver 2 deliveries to pay/refusing (dry run, nothing changed).');
    const run = await runCliInProcess(['redeliver', '--destination', 'refusing', '--json'], env);
    expect(run.code, run.output).toBe(0);
    expect(JSON.parse(run.stdout)).toMatchObject({ count: 2, endpoint: 'pay', destination: 'refusing' });
    expect(await passAll()).toEqual({ paused: 0, refusing: 2, healthy: 0 });
    await settled('refusing', 3, 'delivered');
    const nothing = await runCliInProcess(['redeliver', '--destination', 'refusing'], env);
    expect(nothing.code).toBe(2);
    expect(nothing.stderr).toContain('nothing_changed');

    const pause = await runCliInProcess(['destination', 'pause', 'healthy'], env);
    expect(pause.code, pause.output).toBe(0);
    expect(pause.stdout).toContain('Paused pay/healthy: 0 deliveries held.');
    const resume = await runCliInProcess(['destination', 'resume', 'healthy'], env);
    expect(resume.stdout).toContain('Resumed pay/healthy: 0 held deliveries released.');

    const stats = await runCliInProcess(['stats', '--json'], env);
    expect(stats.code, stats.output).toBe(0);
    const figures = (JSON.parse(stats.stdout) as { destinations: Record<string, unknown>[] }).destinations;
    expect(figures.map(({ p99_seconds: p99, ...row }) => ({ ...row, p99: typeof p99 }))).toEqual(
      ['healthy', 'paused', 'refusing'].map((destination) => ({
        endpoint: 'pay',
        destination,
        waiting: 0,
        held: 0,
        dead: 0,
        delivered: 3,
        p99: 'number',
        breaker: 'closed',
        paused: null,
      })),
    );
    const text = await runCliInProcess(['stats'], env);
    expect(text.stdout).toMatch(
      /ENDPOINT\s+DESTINATION\s+WAITING\s+HELD\s+DEAD\s+DELIVERED\s+P99\s+BREAKER\s+PAUSED/,
    );
    expect(text.stdout).toMatch(/pay\s+refusing\s+0\s+0\s+0\s+3\s+\S+\s+closed/);

    const unknown = await runCliInProcess(['destination', 'pause', 'nosuch'], env);
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toContain('destination_unknown');
    expect(unknown.stderr).toContain('pay/paused, pay/refusing, pay/healthy');
  });
});
