import { createHash, randomUUID } from 'node:crypto';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { auditCommand } from '../../services/cli/commands/audit.ts';
import { eventsListCommand, eventsShowCommand } from '../../services/cli/commands/events.ts';
import { pruneCommand } from '../../services/cli/commands/prune.ts';
import { startConsole } from '../../services/console/server.ts';
import { listActions } from '../../services/core/audit/audit.ts';
import { DEFAULT_DEDUPE_HORIZON_MS } from '../../services/core/config/dedupe-schema.ts';
import { parseConfig } from '../../services/core/config/load.ts';
import {
  destinationStats,
  listDeliveries,
  pauseDestination,
  redeliver,
  resumeDestination,
  showDelivery,
} from '../../services/core/destinations/actions.ts';
import { registerDestinationGauges } from '../../services/core/destinations/metrics.ts';
import { routesFrom } from '../../services/core/destinations/routes.ts';
import { findOrphans, requeue, requeueOrphans } from '../../services/core/inbox/requeue.ts';
import { createRegistry } from '../../services/core/metrics.ts';
import { registerPauseMetrics } from '../../services/core/pause/metrics.ts';
import { pauseEndpoint, resumeEndpoint } from '../../services/core/pause/pause.ts';
import { dropQuarantined, listQuarantined, showQuarantined } from '../../services/core/quarantine/actions.ts';
import { registerQuarantineMetrics } from '../../services/core/quarantine/metrics.ts';
import { applyQueue } from '../../services/core/queue/names.ts';
import { registerBacklogMetrics } from '../../services/core/read-models/backlog.ts';
import { collectStats } from '../../services/core/read-models/stats.ts';
import { readStates } from '../../services/core/reconcile/state-sql.ts';
import { prune } from '../../services/core/retention/prune.ts';
import { type RunningDestinationRelay, startDestinationRelay } from '../../services/worker/destinations.ts';
import { apiClient } from '../support/api-client.ts';
import { silentLogger } from '../support/apply.ts';
import { createTestDatabase, type TestDatabase } from '../support/database.ts';
import { post, standardWebhook } from '../support/deliveries.ts';
import { type FakeDownstream, startFakeDownstream } from '../support/fake-downstream.ts';
import { SW_SECRET, startTestGateway, type TestGateway } from '../support/gateway.ts';
import { type AuditTarget, auditTargets, PreparedTarget, WATCHED_HOOKGATE } from '../support/plans.ts';
import { recordStatements, type SentStatement } from '../support/statement-recorder.ts';
import {
  startTestWorker,
  type TestWorker,
  waitFor,
  workerConfig,
  workerConfigDocument,
} from '../support/worker-harness.ts';

// Every statement hookgate (and pg-boss on its behalf) sends on a hot path must read the tables
// that grow with traffic through an index, whatever their sizes when its plan was made. A
// named prepared statement keeps one plan for its connection's life, usually made while the
// tables were small: on PostgreSQL 15 the claim's plan, made on empty tables, read the whole
// inbox and job table on every claim as they grew.
//
// The audit records what really runs (a gateway and a worker in this process, deliveries over
// HTTP, retries into dead, destinations (by filter and routed by billing) to a local downstream, stats, backlog metrics, requeue,
// prune), then, for each distinct statement that can read a watched table, prepares it while the
// tables are tiny (analysed, as autovacuum leaves a small table), forces the generic plan and
// runs it more than five times (PostgreSQL then settles on a cached plan), grows the inbox, the
// job table, the counts and every table of plans.ts's WATCHED_HOOKGATE (destinations,
// audit, attempts, pause state, quarantine, reconciliation) to GROWN rows each, and asks for the
// plan again:
// - the custom plan (what an unnamed statement gets: planned for every execution) on the grown
//   tables, for every statement;
// - the cached generic plan made on tiny tables, for every statement the code prepares by name
//   (the claim) and for every statement of hookgate's own whose generic plan happens to be an
//   index plan (so it stays one).
// A sequential scan of a watched table fails the test, with the statement and its plan.

const GROWN = 200_000;
const SECRET = SW_SECRET;

let db: TestDatabase;
let gateway: TestGateway;
let worker: TestWorker;
let downstream: FakeDownstream;
let destinationRelay: RunningDestinationRelay | undefined;
let sent: SentStatement[] = [];

const endpoints = (downstreamUrl: string) => ({
  rec: { handler: 'record' },
  proj: {
    handler: 'project',
    extract: { entityId: '/data/id', version: '/data/version' },
  },
  billed: {
    handler: 'billing',
    options: { notify: 'ledger' },
    destinations: { ledger: { url: `${downstreamUrl}/ledger`, routedBy: 'handler' } },
  },
  fails: { handler: `sql:SELECT CASE WHEN $1::jsonb #>> '{payload,data,fail}' = 'yes' THEN 'x' END` },
  sync: { handler: 'record', mode: 'sync' },
  dest: {
    handler: 'record',
    destinations: {
      down: {
        url: `${downstreamUrl}/dest`,
        retry: { limit: 1, backoff: '100ms', max: '100ms', jitter: 0 },
        rateLimit: { perSecond: 1000 },
        breaker: { failures: 5, cooldown: '1s' },
      },
    },
  },
});

async function deliver(
  endpoint: string,
  eventId: string,
  data: Record<string, unknown>,
  type?: string,
): Promise<void> {
  const delivery = standardWebhook(SECRET, { eventId, data, ...(type ? { type } : {}) });
  const reply = await post(`${gateway.url}/webhooks/${endpoint}`, delivery);
  expect(reply.status, JSON.stringify(reply.json)).toBe(200);
}

async function unsettled(): Promise<number> {
  const { rows } = await db.pool.query<{ n: number }>(
    `SELECT count(*)::int AS n FROM hookgate.inbox WHERE status = 'pending'`,
  );
  return rows[0]!.n;
}

beforeAll(async () => {
  db = await createTestDatabase();
  downstream = await startFakeDownstream();
  downstream.fallback = { status: 204 };
  const config = workerConfig(endpoints(downstream.url));
  const recorder = recordStatements();
  try {
    gateway = await startTestGateway(db.url, config);
    worker = await startTestWorker(db.url, config);
    destinationRelay = startDestinationRelay({
      pool: worker.pool,
      routes: routesFrom(config),
      logger: silentLogger,
      pollIntervalMs: 50,
    });
    for (let n = 0; n < 12; n += 1) {
      await deliver('dest', `dest_${n}`, { id: `d${n}` });
      await deliver('rec', `rec_${n}`, { id: `r${n}` });
      await deliver('proj', `proj_${n}`, { id: `e${n % 3}`, version: n });
      const invoice = { id: `in_${n}`, status: 'paid', amount_paid: 100 + n, currency: 'eur' };
      await deliver('billed', `billed_${n}`, { object: invoice }, 'invoice.paid');
      await deliver('sync', `sync_${n}`, { id: `s${n}` });
      await deliver('fails', `fails_${n}`, { id: `x${n}`, fail: n % 4 === 0 ? 'yes' : 'no' });
      // Duplicates, as providers send them.
      if (n % 3 === 0) await deliver('rec', `rec_${n}`, { id: `r${n}` });
    }
    await waitFor('every event applied or dead', async () => (await unsettled()) === 0, 60_000);
    // The destination deliveries, by filter and routed (the test's own reads would be audited too).
    await waitFor('the deliveries delivered', async () => downstream.requests.length >= 24, 30_000);
    // A verified delivery without a type: quarantined (the gateway's insert within the cap).
    const untyped = standardWebhook(SECRET, { eventId: 'untyped_1', body: '{"no":"type"}' });
    expect((await post(`${gateway.url}/webhooks/rec`, untyped)).json).toMatchObject({
      status: 'quarantined',
    });
    await operatorActions(config);
    await apiRequests();
    // What operators and scrapers run against the same tables.
    await collectStats(db.pool, new Date(Date.now() - 3_600_000), null, Object.keys(config.endpoints));
    await collectStats(db.pool, new Date(Date.now() - 3_600_000), 'rec', Object.keys(config.endpoints));
    const registry = createRegistry();
    registerBacklogMetrics(registry, { db: db.pool, endpoints: Object.keys(config.endpoints) });
    await registry.metrics();
    await requeue(db.pool, { endpoint: 'fails', statuses: ['dead'], actor: 'test' });
    await requeueOrphans(db.pool, worker.boss, 'rec', { maxAttempts: config.worker.retryLimit + 1 }, 'test');
    // The sweeper's own statements, as a worker runs them (grace 0: every pending row is looked at).
    await findOrphans(db.pool, worker.boss, 'rec', { maxAttempts: config.worker.retryLimit + 1 });
    await waitFor('the requeued events dead again', async () => (await unsettled()) === 0, 60_000);
    await cliCommands();
    await prune(db.pool, {
      actor: 'test',
      inboxOlderThanMs: 0,
      dedupe: { now: new Date(), horizonMs: DEFAULT_DEDUPE_HORIZON_MS },
      deliveriesOlderThanMs: 0,
      chunk: 5,
    });
  } finally {
    recorder.stop();
  }
  sent = recorder.sent;
}, 180_000);

/** The operators' actions and the gauges on the newer tables, as the CLI, console and pods run them. */
async function operatorActions(config: ReturnType<typeof workerConfig>): Promise<void> {
  const endpoints = Object.keys(config.endpoints);
  const registry = createRegistry();
  registerPauseMetrics(registry, { db: db.pool, endpoints });
  registerDestinationGauges(registry, { db: db.pool, routes: routesFrom(config) });
  registerQuarantineMetrics(registry, { db: db.pool, endpoints, maxHeldPerEndpoint: 10_000 });
  await registry.metrics();
  await pauseEndpoint(db.pool, { endpoint: 'rec', actor: 'test', reason: 'audit' });
  await resumeEndpoint(db.pool, { endpoint: 'rec', actor: 'test' });
  await pauseDestination(db.pool, config, { endpoint: 'dest', destination: 'down', actor: 'test' });
  await resumeDestination(db.pool, config, { endpoint: 'dest', destination: 'down', actor: 'test' });
  await redeliver(db.pool, config, { endpoint: 'dest', destination: 'down', actor: 'test', dryRun: true });
  const [delivery] = await listDeliveries(db.pool, { endpoint: 'dest', destination: 'down', limit: 10 });
  await listDeliveries(db.pool, { status: 'dead', limit: 10 });
  await showDelivery(db.pool, delivery!.id);
  await destinationStats(db.pool, config, new Date(Date.now() - 3_600_000), null);
  const held = await listQuarantined(db.pool, { endpoint: 'rec' });
  await listQuarantined(db.pool, { all: true });
  await showQuarantined(
    db.pool,
    held.map((row) => row.id),
  );
  await dropQuarantined(db.pool, { ids: held.map((row) => row.id), actor: 'test', reason: 'audit' });
  await listActions(db.pool, { endpoint: 'rec', limit: 100 });
  await listActions(db.pool, { since: new Date(Date.now() - 3_600_000), command: 'pause', limit: 100 });
  await readStates(db.pool);
}

const API_TOKEN = 'plan-audit-api-token-0123456789abcdef0123';

/**
 * The management API's every route, over HTTP to a console on the same database: its reads (with
 * filters, and a next page of each list), the dry run of every action and one real requeue (the
 * Idempotency-Key's claim and answer), the upkeep a console runs at start.
 */
async function apiRequests(): Promise<void> {
  const document = workerConfigDocument(endpoints(downstream.url));
  const config = parseConfig(
    {
      ...document,
      endpoints: {
        ...(document.endpoints as Record<string, unknown>),
        // Reconciles (the API's reconcile status and start read the queue's live runs).
        pay: {
          provider: 'stripe',
          secrets: ['whsec_plan_audit_not_a_secret'],
          replay: { apiBase: 'http://127.0.0.1:9' },
          reconcile: { since: '2h' },
        },
      },
      console: {
        port: 0,
        sessionSecret: 'plan-audit-session-secret-0123456789abcdef',
        tokens: [{ name: 'plans', sha256: createHash('sha256').update(API_TOKEN).digest('hex') }],
      },
    },
    {},
  );
  const running = await startConsole({
    config,
    databaseUrl: db.url,
    boss: worker.boss,
    logger: silentLogger,
    embedded: false,
    env: {},
  });
  try {
    const api = apiClient(running.url, API_TOKEN);
    const ok = <T extends { response: Response }>(result: T): T => {
      expect(result.response.status, result.response.url).toBeLessThan(300);
      return result;
    };
    ok(await api.GET('/me'));
    ok(await api.GET('/tokens'));
    ok(await api.GET('/endpoints'));
    ok(await api.GET('/stats'));
    ok(await api.GET('/stats', { params: { query: { endpoint: 'rec', since: '2h' } } }));
    for (const query of [
      {},
      { endpoint: 'fails', status: 'dead' as const },
      { status: 'pending' as const },
      { endpoint: 'rec', type: 'thing.updated', since: '1h', until: new Date().toISOString() },
      { event_id: 'rec_1' },
      { entity_id: 'e1' },
    ]) {
      const page = ok(await api.GET('/events', { params: { query: { ...query, limit: 2 } } }));
      const cursor = page.data?.next_cursor;
      if (cursor) ok(await api.GET('/events', { params: { query: { ...query, limit: 2, cursor } } }));
    }
    ok(
      await api.GET('/events/{endpoint}/{event_id}', {
        params: { path: { endpoint: 'dest', event_id: 'dest_0' } },
      }),
    );
    const deliveries = ok(
      await api.GET('/deliveries', {
        params: { query: { endpoint: 'dest', destination: 'down', limit: 2 } },
      }),
    );
    ok(
      await api.GET('/deliveries', {
        params: {
          query: { endpoint: 'dest', destination: 'down', limit: 2, cursor: deliveries.data!.next_cursor! },
        },
      }),
    );
    ok(await api.GET('/deliveries', { params: { query: { status: 'dead', since: '1h' } } }));
    const delivery = deliveries.data!.items[0]!.id;
    ok(await api.GET('/deliveries/{delivery_id}', { params: { path: { delivery_id: delivery } } }));
    ok(await api.GET('/destinations'));
    const held = ok(await api.GET('/quarantine', { params: { query: { limit: 1 } } }));
    ok(
      await api.GET('/quarantine', { params: { query: { endpoint: 'rec', reason: 'event_type_missing' } } }),
    );
    if (held.data?.next_cursor)
      ok(await api.GET('/quarantine', { params: { query: { limit: 1, cursor: held.data.next_cursor } } }));
    const quarantined = held.data?.items[0]?.id;
    if (quarantined)
      ok(await api.GET('/quarantine/{quarantine_id}', { params: { path: { quarantine_id: quarantined } } }));
    const audit = ok(await api.GET('/audit', { params: { query: { since: '1h', limit: 2 } } }));
    ok(
      await api.GET('/audit', {
        params: { query: { since: '1h', limit: 2, cursor: audit.data!.next_cursor! } },
      }),
    );
    ok(
      await api.GET('/audit', {
        params: { query: { actor: 'api:plans', endpoint: 'rec', command: 'pause' } },
      }),
    );
    ok(await api.GET('/reconcile'));
    const header = () => ({ 'Idempotency-Key': randomUUID() });
    const dry = { dryRun: true };
    ok(
      await api.POST('/endpoints/{endpoint}/pause', {
        params: { path: { endpoint: 'rec' }, query: dry, header: header() },
      }),
    );
    ok(
      await api.POST('/endpoints/{endpoint}/resume', {
        params: { path: { endpoint: 'rec' }, query: dry, header: header() },
      }),
    );
    ok(
      await api.POST('/endpoints/{endpoint}/requeue', {
        params: { path: { endpoint: 'fails' }, query: dry, header: header() },
      }),
    );
    ok(
      await api.POST('/endpoints/{endpoint}/requeue', {
        params: { path: { endpoint: 'fails' }, header: header() },
        body: { status: 'dead', limit: 1 },
      }),
    );
    ok(
      await api.POST('/endpoints/{endpoint}/discard', {
        params: { path: { endpoint: 'fails' }, query: dry, header: header() },
        body: { reason: 'plans' },
      }),
    );
    ok(
      await api.POST('/endpoints/{endpoint}/reconcile', {
        params: { path: { endpoint: 'pay' }, query: dry, header: header() },
      }),
    );
    ok(
      await api.POST('/events/{endpoint}/{event_id}/requeue', {
        params: { path: { endpoint: 'fails', event_id: 'fails_4' }, query: dry, header: header() },
      }),
    );
    ok(
      await api.POST('/events/{endpoint}/{event_id}/discard', {
        params: { path: { endpoint: 'fails', event_id: 'fails_4' }, query: dry, header: header() },
        body: { reason: 'plans' },
      }),
    );
    ok(
      await api.POST('/deliveries/{delivery_id}/redeliver', {
        params: { path: { delivery_id: delivery }, query: dry, header: header() },
      }),
    );
    for (const action of ['pause', 'resume', 'redeliver'] as const)
      ok(
        await api.POST(`/destinations/{endpoint}/{destination}/${action}`, {
          params: { path: { endpoint: 'dest', destination: 'down' }, query: dry, header: header() },
        }),
      );
    if (quarantined) {
      ok(
        await api.POST('/quarantine/{quarantine_id}/release', {
          params: { path: { quarantine_id: quarantined }, query: dry, header: header() },
        }),
      );
      ok(
        await api.POST('/quarantine/{quarantine_id}/drop', {
          params: { path: { quarantine_id: quarantined }, query: dry, header: header() },
          body: { reason: 'plans' },
        }),
      );
    }
  } finally {
    await running.stop();
  }
}

/** The CLI's read models and retention, run in this process as `hookgate` runs them. */
async function cliCommands(): Promise<void> {
  const saved = { url: process.env.DATABASE_URL, write: process.stdout.write };
  process.env.DATABASE_URL = db.url;
  process.stdout.write = (() => true) as typeof process.stdout.write;
  try {
    await eventsListCommand({ endpoint: 'fails', status: 'dead', json: true });
    await eventsListCommand({ json: true });
    await eventsShowCommand({ eventId: 'fails_0', endpoint: 'fails', json: true });
    await eventsShowCommand({ eventId: 'billed_0', endpoint: 'billed', json: true });
    await eventsShowCommand({ eventId: 'dest_0', endpoint: 'dest', json: true });
    await auditCommand({ since: '1h', json: true });
    await pruneCommand({ olderThan: '3d', deliveriesOlderThan: '3d', batch: 100, json: true });
  } finally {
    process.stdout.write = saved.write;
    if (saved.url === undefined) delete process.env.DATABASE_URL;
    else process.env.DATABASE_URL = saved.url;
  }
}

afterAll(async () => {
  await destinationRelay?.stop();
  await worker?.stop();
  await gateway?.stop();
  await downstream?.close();
  await db?.drop();
});

/**
 * Grows every watched table to GROWN rows (without ANALYZE), as hours of traffic would. The rows
 * are consistent by construction (each attempt names a delivery just inserted, each inbox row gets
 * its deduplication key in one statement after them), so triggers are off for the load: the
 * foreign-key checks' plans, cached in this session, were made when the referenced tables were
 * tiny, and on PostgreSQL 15 each of 200 000 checks then read a whole index (the load took over
 * 15 minutes); the inbox's key trigger, row by row, took half of the load's time. Hookgate's own
 * statements never insert this way; the audit is about their plans, not this loader's.
 */
async function grow(client: pg.ClientBase): Promise<void> {
  await client.query(`SET session_replication_role = replica`);
  try {
    await growRows(client);
  } finally {
    await client.query(`RESET session_replication_role`);
  }
}

async function growRows(client: pg.ClientBase): Promise<void> {
  await client.query(
    `INSERT INTO hookgate.inbox (endpoint, event_id, provider, event_type, payload, headers, status, attempts,
                                 received_at, processed_at)
     SELECT (ARRAY['rec','proj','billed','sync','fails'])[1 + n % 5], 'grown_' || n, 'standard-webhooks', 'thing.updated',
            jsonb_build_object('id', n), '{}',
            CASE WHEN n % 1000 = 0 THEN 'dead' WHEN n % 1000 = 1 THEN 'pending' ELSE 'processed' END,
            1, now() - (n % 43200) * interval '1 minute', now()
       FROM generate_series(1, $1::int) AS n`,
    [GROWN],
  );
  await client.query(
    `INSERT INTO hookgate.inbox_keys (endpoint, event_id, body_digest, received_at)
     SELECT endpoint, event_id, body_digest, received_at FROM hookgate.inbox WHERE event_id LIKE 'grown_%'`,
  );
  // The inbox is partitioned: these rows, received over the last 30 days, land in the week that
  // holds now (from the day the database was migrated) and, before it, in the default partition;
  // the weeks made ahead are empty (their scans cost nothing, and their statements are planned
  // again once they fill: test/support/plans.ts).
  await client.query(
    `INSERT INTO pgboss.job (id, name, data, state, completed_on)
     SELECT gen_random_uuid(), (ARRAY[$2, $3, $4])[1 + n % 3], jsonb_build_object('n', n), 'completed', now()
       FROM generate_series(1, $1::int) AS n`,
    [GROWN, applyQueue('rec'), applyQueue('proj'), applyQueue('fails')],
  );
  await client.query(
    `INSERT INTO hookgate.delivery_counts (endpoint, minute, shard, accepted, duplicate)
     SELECT (ARRAY['rec','proj','billed','sync','fails'])[1 + n % 5], date_trunc('minute', now()) - (n / 50) * interval '1 minute',
            (n % 50)::smallint, 10, 2
       FROM generate_series(1, $1::int) AS n`,
    [GROWN],
  );
  await growNewerTables(client);
}

const ENDPOINTS_SQL = `(ARRAY['rec','proj','billed','sync','fails','dest'])[1 + n % 6]`;

/** The tables of operations, destinations, quarantine and reconciliation, grown the same way. */
async function growNewerTables(client: pg.ClientBase): Promise<void> {
  await client.query(
    `INSERT INTO hookgate.destination_deliveries (endpoint, destination, event_id, event_type, webhook_id, status,
                                                  attempts, next_attempt_at, created_at, last_attempt_at, settled_at)
     SELECT 'dest', 'down', 'grown_' || n, 'thing.updated', 'wh_grown_' || n,
            CASE WHEN n % 1000 = 0 THEN 'dead' WHEN n % 1000 = 1 THEN 'held' ELSE 'delivered' END, 1,
            now() - n * interval '1 second', now() - n * interval '1 second', now() - n * interval '1 second',
            CASE WHEN n % 1000 > 1 THEN now() - n * interval '1 second' END
       FROM generate_series(1, $1::int) AS n`,
    [GROWN],
  );
  await client.query(
    `INSERT INTO hookgate.destination_attempts (delivery_id, attempt, started_at, duration_ms, http_status)
     SELECT id, 1, created_at, 5, 204 FROM hookgate.destination_deliveries WHERE event_id LIKE 'grown_%'`,
  );
  await client.query(
    `INSERT INTO hookgate.audit (at, actor, command, endpoint, filters, count, dry_run, event_ids)
     SELECT now() - n * interval '10 seconds', 'grower', (ARRAY['requeue','discard','pause','prune'])[1 + n % 4],
            ${ENDPOINTS_SQL}, '{}', 1, n % 2 = 0, ARRAY['grown_' || n]
       FROM generate_series(1, $1::int) AS n`,
    [GROWN],
  );
  await client.query(
    `INSERT INTO hookgate.apply_attempts (endpoint, event_id, attempt, at, worker, outcome, duration_ms)
     SELECT ${ENDPOINTS_SQL}, 'grown_' || n, 1, now() - n * interval '1 second', 'grower', 'processed', 1
       FROM generate_series(1, $1::int) AS n`,
    [GROWN],
  );
  await client.query(
    `INSERT INTO hookgate.quarantine (endpoint, received_at, reason, message, body, body_digest,
                                      released_at, dropped_at, settled_by)
     SELECT ${ENDPOINTS_SQL}, now() - n * interval '1 second', 'event_type_missing', 'grown', '\\x7b7d'::bytea,
            sha256(('grown_' || n)::bytea),
            CASE WHEN n % 2 = 0 AND n % 1000 <> 0 THEN now() - n * interval '1 second' END,
            CASE WHEN n % 2 = 1 THEN now() - n * interval '1 second' END, 'grower'
       FROM generate_series(1, $1::int) AS n`,
    [GROWN],
  );
  await client.query(
    `INSERT INTO hookgate.api_idempotency (token, key, request_digest, created_at, status, answer)
     SELECT 'grower', 'key_' || n, sha256(('key_' || n)::bytea), now() - n * interval '1 second', 200, '{}'
       FROM generate_series(1, $1::int) AS n`,
    [GROWN],
  );
  // One row per endpoint (or destination): as many as a very large configuration has.
  await client.query(
    `INSERT INTO hookgate.endpoint_state (endpoint, paused_at, paused_by)
     SELECT 'grown_' || n, CASE WHEN n % 1000 = 0 THEN now() END, CASE WHEN n % 1000 = 0 THEN 'grower' END
       FROM generate_series(1, $1::int) AS n`,
    [GROWN],
  );
  await client.query(
    `INSERT INTO hookgate.destination_state (endpoint, destination, paused, changed_by)
     SELECT 'grown_' || n, 'down', n % 1000 = 0, 'grower' FROM generate_series(1, $1::int) AS n`,
    [GROWN],
  );
  await client.query(
    `INSERT INTO hookgate.destination_rate (endpoint, destination, tokens, tokens_at)
     SELECT 'grown_' || n, 'down', 1, now() FROM generate_series(1, $1::int) AS n`,
    [GROWN],
  );
  await client.query(
    `INSERT INTO hookgate.destination_breaker (endpoint, destination, state)
     SELECT 'grown_' || n, 'down', 'closed' FROM generate_series(1, $1::int) AS n`,
    [GROWN],
  );
  await client.query(
    `INSERT INTO hookgate.reconcile_state (endpoint, covered_since, watermark)
     SELECT 'grown_' || n, now() - interval '1 day', now() FROM generate_series(1, $1::int) AS n`,
    [GROWN],
  );
}

interface Finding {
  readonly target: AuditTarget;
  readonly when: string;
  readonly text: string;
  readonly scans: string[];
}

describe('the plans of every statement on a hot path', () => {
  it('read the grown tables through indexes, whatever their sizes when the plan was made', async () => {
    const targets = auditTargets(sent);
    // The premise: the run really sent the hot statements (the claim, the worker's, pg-boss's).
    expect(targets.some((t) => t.named && /INSERT INTO hookgate\.inbox/.test(t.text))).toBe(true);
    expect(targets.some((t) => /SKIP LOCKED/i.test(t.text))).toBe(true);
    expect(targets.length).toBeGreaterThan(20);

    const client = new pg.Client({ connectionString: db.url });
    client.on('error', () => {});
    await client.connect();
    const findings: Finding[] = [];
    const unpreparable: string[] = [];
    const prepared: PreparedTarget[] = [];
    const tinyGeneric = new Map<PreparedTarget, string[]>();
    let major = 0;
    try {
      const version = await client.query<{ v: string }>(`SELECT current_setting('server_version_num') AS v`);
      major = Math.floor(Number(version.rows[0]!.v) / 10_000);
      // The project's major really is the one this run claims to prove.
      const expected = inject('postgresMajor');
      if (expected !== null) expect(major).toBe(expected);
      await client.query('ANALYZE');
      for (const [index, target] of targets.entries()) {
        const statement = new PreparedTarget(client, target, `audit_${index}`);
        try {
          await statement.prepare();
        } catch (error) {
          unpreparable.push(`${(error as Error).message}\n${target.text}`);
          continue;
        }
        prepared.push(statement);
      }
      // On tiny tables: the generic plan, cached, then more than five runs (PostgreSQL's switch).
      for (const statement of prepared) {
        tinyGeneric.set(statement, (await statement.explain('force_generic_plan')).scans);
        for (let n = 0; n < 6; n += 1) await statement.explain('auto');
      }
      await grow(client);
      const sizes = await client.query<{ inbox: number; jobs: number; counts: number }>(
        `SELECT (SELECT count(*)::int FROM hookgate.inbox) AS inbox, (SELECT count(*)::int FROM pgboss.job) AS jobs,
                (SELECT count(*)::int FROM hookgate.delivery_counts) AS counts`,
      );
      for (const size of Object.values(sizes.rows[0]!)) expect(size).toBeGreaterThanOrEqual(GROWN);
      for (const table of WATCHED_HOOKGATE) {
        const { rows } = await client.query<{ n: number }>(
          `SELECT count(*)::int AS n FROM hookgate.${table}`,
        );
        expect(rows[0]!.n, table).toBeGreaterThanOrEqual(GROWN);
      }

      // The plans kept from the tiny tables, used on the grown ones before any ANALYZE.
      for (const statement of prepared) {
        const keepsGeneric = statement.target.named || tinyGeneric.get(statement)!.length === 0;
        if (!keepsGeneric) continue;
        for (const mode of ['force_generic_plan', 'auto'] as const) {
          const plan = await statement.explain(mode);
          if (plan.scans.length > 0) {
            findings.push({
              target: statement.target,
              when: `${mode}, planned on tiny tables, run on ${GROWN} rows`,
              ...plan,
            });
          }
        }
      }
      // Once autovacuum has analysed the grown tables: what every unnamed statement is planned
      // with at each execution.
      await client.query('ANALYZE');
      for (const statement of prepared) {
        const custom = await statement.explain('force_custom_plan');
        if (custom.scans.length > 0) {
          findings.push({
            target: statement.target,
            when: `custom plan on ${GROWN} analysed rows`,
            ...custom,
          });
        }
      }
    } finally {
      await client.end();
    }
    const named = prepared.filter((statement) => statement.target.named).length;
    const indexGeneric = [...tinyGeneric.values()].filter((scans) => scans.length === 0).length;
    console.log(
      `plan audit on PostgreSQL ${major}: ${prepared.length} statements (${named} prepared by name); ` +
        `${indexGeneric} keep index plans planned on tiny tables; ${findings.length} findings`,
    );
    const report = findings.map(
      (f) => `${f.when}: scans ${f.scans.join(', ')}\n${f.target.text.trim()}\n--- plan ---\n${f.text}`,
    );
    expect(unpreparable, unpreparable.join('\n\n')).toEqual([]);
    expect(report, report.join('\n\n========\n\n')).toEqual([]);
  }, 600_000);
});
