import { createHash, randomBytes, randomUUID } from 'node:crypto';
import type { PgBoss } from 'pg-boss';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { requestDigest } from '../../services/console/api/action-runner.ts';
import { openApiDocument } from '../../services/console/api/document.ts';
import type { components } from '../../services/console/api/schema.ts';
import { type RunningConsole, startConsole } from '../../services/console/server.ts';
import { claimKey } from '../../services/core/api/idempotency.ts';
import { recordActions } from '../../services/core/audit/audit.ts';
import { parseConfig } from '../../services/core/config/load.ts';
import { createBoss } from '../../services/core/queue/boss.ts';
import { ensureQueues, retryPolicyFrom } from '../../services/core/queue/queues.ts';
import { ensureReconcileQueue } from '../../services/core/reconcile/schedule.ts';
import { type ApiClient, apiClient } from '../support/api-client.ts';
import { ContractChecker } from '../support/api-contract.ts';
import { silentLogger } from '../support/apply.ts';
import { createTestDatabase, type TestDatabase } from '../support/database.ts';
import { SW_SECRET } from '../support/gateway.ts';

// The management API against its committed OpenAPI document (services/console/api/openapi.yaml):
// every route gets real requests (the happy path, dry run and run, each error it documents, lists
// paged to the end) over HTTP to a real console server on a real PostgreSQL, through the client
// generated from the document (test/support/api-client.ts), and every answer is validated against
// the document (test/support/api-contract.ts, ajv 2020). The last test fails on any documented
// (operation, status) no request produced.

const token = () => randomBytes(24).toString('base64url');
const TOKENS = { ops: token(), view: token(), limited: token() };
const sha = (text: string) => createHash('sha256').update(text).digest('hex');

let db: TestDatabase;
let boss: PgBoss;
let running: RunningConsole;
let limited: RunningConsole;
const checker = new ContractChecker();
let ops: ApiClient;
let viewer: ApiClient;
let anonymous: ApiClient;
let stranger: ApiClient;
let throttled: ApiClient;
const quarantined: Record<string, string> = {};

function configDocument(rateLimit: number) {
  return {
    endpoints: {
      shop: {
        provider: 'standard-webhooks',
        secrets: [SW_SECRET],
        destinations: {
          ledger: { url: 'http://127.0.0.1:9/ledger' },
          crm: { url: 'http://127.0.0.1:9/crm' },
        },
      },
      pay: {
        provider: 'stripe',
        secrets: ['whsec_contract_test_not_a_secret'],
        replay: { apiBase: 'http://127.0.0.1:9' },
        reconcile: { since: '2h', settle: '1m', budget: 10 },
      },
    },
    console: {
      port: 0,
      sessionSecret: 'api-contract-test-session-secret-0123456789',
      tokens: [
        { name: 'ops', sha256: sha(TOKENS.ops), role: 'operator' },
        { name: 'view', sha256: sha(TOKENS.view), role: 'viewer' },
        { name: 'limited', sha256: sha(TOKENS.limited) },
      ],
      api: { rateLimit },
    },
  };
}

/** Every item of a list, page after page until next_cursor is null (at most 50 pages). */
async function allPages<Item>(
  page: (cursor: string | undefined) => Promise<{ data?: { items: Item[]; next_cursor: string | null } }>,
): Promise<Item[]> {
  const items: Item[] = [];
  let cursor: string | undefined;
  for (let n = 0; n < 50; n += 1) {
    const { data } = await page(cursor);
    items.push(...(data?.items ?? []));
    if (!data?.next_cursor) return items;
    cursor = data.next_cursor;
  }
  throw new Error('more than 50 pages');
}

async function seed(): Promise<void> {
  // shop's inbox: 20 processed, 6 dead, 3 parked, 1 discarded, newest first by a minute each.
  await db.pool.query(
    `INSERT INTO hookgate.inbox (endpoint, event_id, provider, event_type, entity_type, entity_id, payload, headers,
                                 status, attempts, last_error, received_at, processed_at, discarded_at, discarded_by, discard_reason)
     SELECT 'shop', id, 'standard-webhooks', 'order.paid', 'order', 'ord_' || (n % 4),
            jsonb_build_object('type', 'order.paid', 'data', jsonb_build_object('id', n)),
            jsonb_build_object('webhook-id', id), status, CASE WHEN status = 'processed' THEN 1 ELSE 3 END,
            CASE WHEN status IN ('dead', 'parked') THEN 'handler_error: downstream timed out' END,
            now() - n * interval '1 minute',
            CASE WHEN status = 'processed' THEN now() - n * interval '1 minute' + interval '50 ms' END,
            CASE WHEN status = 'discarded' THEN now() END, CASE WHEN status = 'discarded' THEN 'alice' END,
            CASE WHEN status = 'discarded' THEN 'test-mode leftover' END
       FROM (SELECT n, CASE WHEN n <= 20 THEN 'evt_p_' || n WHEN n <= 26 THEN 'evt_dead_' || (n - 20)
                            WHEN n <= 29 THEN 'evt_parked_' || (n - 26) ELSE 'evt_disc_1' END AS id,
                    CASE WHEN n <= 20 THEN 'processed' WHEN n <= 26 THEN 'dead' WHEN n <= 29 THEN 'parked'
                         ELSE 'discarded' END AS status
               FROM generate_series(1, 30) AS n) AS rows`,
  );
  await db.pool.query(
    `INSERT INTO hookgate.delivery_counts (endpoint, minute, shard, accepted, duplicate)
     VALUES ('shop', date_trunc('minute', now()), 0, 30, 3)`,
  );
  // shop/ledger: 6 dead deliveries (of the dead events) and 7 delivered, each with an attempt.
  await db.pool.query(
    `INSERT INTO hookgate.destination_deliveries (endpoint, destination, event_id, event_type, webhook_id, status,
                                                  attempts, http_status, last_error, created_at, last_attempt_at,
                                                  next_attempt_at, settled_at)
     SELECT 'shop', 'ledger', CASE WHEN n <= 6 THEN 'evt_dead_' || n ELSE 'evt_p_' || n END, 'order.paid',
            'msg_ledger_' || n, CASE WHEN n <= 6 THEN 'dead' ELSE 'delivered' END, CASE WHEN n <= 6 THEN 5 ELSE 1 END,
            CASE WHEN n <= 6 THEN 503 ELSE 204 END, CASE WHEN n <= 6 THEN 'HTTP 503' END,
            now() - n * interval '1 minute', now(), now(), now()
       FROM generate_series(1, 13) AS n`,
  );
  await db.pool.query(
    `INSERT INTO hookgate.destination_attempts (delivery_id, attempt, started_at, duration_ms, http_status, error)
     SELECT id, 1, created_at, 12, http_status, last_error FROM hookgate.destination_deliveries`,
  );
  // Held quarantined deliveries: 5 without a type, and one a release can claim.
  const rows = await db.pool.query<{ id: string; tag: string }>(
    `INSERT INTO hookgate.quarantine (endpoint, received_at, reason, message, body, headers, body_digest)
     SELECT 'shop', now() - n * interval '1 second', 'event_type_missing', 'The event type was expected in the body field /type, which holds nothing.',
            convert_to(b, 'UTF8'), jsonb_build_object('webhook-id', tag, 'webhook-timestamp', '1700000000'),
            sha256(convert_to(b || tag, 'UTF8'))
       FROM (SELECT n, 'msg_q_' || n AS tag,
                    CASE WHEN n = 1 THEN '{"type":"order.created","data":{"id":"ord_q"}}' ELSE '{"kind":"x"}' END AS b
               FROM generate_series(1, 6) AS n) AS q
     RETURNING id::text AS id, headers->>'webhook-id' AS tag`,
  );
  for (const row of rows.rows) quarantined[row.tag] = row.id;
  // 40 older audit rows, so the trail has pages to walk.
  await recordActions(
    db.pool,
    Array.from({ length: 40 }, (_, n) => ({
      actor: 'alice',
      command: n % 2 ? 'requeue' : 'discard',
      endpoint: 'shop',
      filters: { n },
      count: 1,
      dryRun: n % 3 === 0,
    })),
  );
}

beforeAll(async () => {
  db = await createTestDatabase();
  boss = createBoss({ connectionString: db.url, max: 2, supervise: false, applicationName: 'api-contract' });
  boss.on('error', () => {});
  await boss.start();
  const config = parseConfig(configDocument(600), {});
  // What the workers create at start: the endpoints' queues (a release's claim sends a job) and
  // the reconcile queue (a run started through the API is a job there).
  await ensureQueues(boss, ['shop', 'pay'], retryPolicyFrom(config.worker));
  await ensureReconcileQueue(boss);
  await seed();
  const base = { databaseUrl: db.url, boss, logger: silentLogger, embedded: false, env: {} };
  running = await startConsole({ ...base, config });
  // A console whose API allows one request a minute per token, its clock held still.
  const frozen = Date.now();
  limited = await startConsole({ ...base, config: parseConfig(configDocument(1), {}), now: () => frozen });
  const middleware = [checker.middleware()];
  ops = apiClient(running.url, TOKENS.ops, middleware);
  viewer = apiClient(running.url, TOKENS.view, middleware);
  anonymous = apiClient(running.url, null, middleware);
  stranger = apiClient(running.url, token(), middleware);
  throttled = apiClient(limited.url, TOKENS.limited, middleware);
}, 120_000);

afterAll(async () => {
  await running?.stop();
  await limited?.stop();
  await boss?.stop({ graceful: false, close: true });
  await db?.drop();
});

/** Every action route, with a target it can act on and whether it takes If-Match. */
interface ActionCase {
  readonly path: string;
  readonly params: Record<string, string>;
  readonly body: Record<string, unknown>;
  readonly ifMatch: boolean;
  /** The same route on something that does not exist (404). */
  readonly unknown: Record<string, string>;
}

function actionCases(): ActionCase[] {
  return [
    {
      path: '/endpoints/{endpoint}/pause',
      params: { endpoint: 'shop' },
      body: { reason: 'deploy' },
      ifMatch: true,
      unknown: { endpoint: 'nope' },
    },
    {
      path: '/endpoints/{endpoint}/resume',
      params: { endpoint: 'shop' },
      body: {},
      ifMatch: true,
      unknown: { endpoint: 'nope' },
    },
    {
      path: '/endpoints/{endpoint}/requeue',
      params: { endpoint: 'shop' },
      body: { status: 'parked' },
      ifMatch: false,
      unknown: { endpoint: 'nope' },
    },
    {
      path: '/endpoints/{endpoint}/discard',
      params: { endpoint: 'shop' },
      body: { event_ids: ['evt_dead_3'], reason: 'test leftover' },
      ifMatch: false,
      unknown: { endpoint: 'nope' },
    },
    {
      path: '/endpoints/{endpoint}/reconcile',
      params: { endpoint: 'pay' },
      body: {},
      ifMatch: false,
      unknown: { endpoint: 'nope' },
    },
    {
      path: '/events/{endpoint}/{event_id}/requeue',
      params: { endpoint: 'shop', event_id: 'evt_dead_1' },
      body: {},
      ifMatch: true,
      unknown: { endpoint: 'shop', event_id: 'evt_nope' },
    },
    {
      path: '/events/{endpoint}/{event_id}/discard',
      params: { endpoint: 'shop', event_id: 'evt_dead_2' },
      body: { reason: 'never valid' },
      ifMatch: true,
      unknown: { endpoint: 'shop', event_id: 'evt_nope' },
    },
    {
      path: '/deliveries/{delivery_id}/redeliver',
      params: { delivery_id: '1' },
      body: {},
      ifMatch: true,
      unknown: { delivery_id: '999999' },
    },
    {
      path: '/destinations/{endpoint}/{destination}/pause',
      params: { endpoint: 'shop', destination: 'ledger' },
      body: { reason: 'ledger deploy' },
      ifMatch: true,
      unknown: { endpoint: 'shop', destination: 'nope' },
    },
    {
      path: '/destinations/{endpoint}/{destination}/resume',
      params: { endpoint: 'shop', destination: 'ledger' },
      body: {},
      ifMatch: true,
      unknown: { endpoint: 'shop', destination: 'nope' },
    },
    {
      path: '/destinations/{endpoint}/{destination}/redeliver',
      params: { endpoint: 'shop', destination: 'ledger' },
      body: {},
      ifMatch: false,
      unknown: { endpoint: 'shop', destination: 'nope' },
    },
    {
      path: '/quarantine/{quarantine_id}/release',
      params: { quarantine_id: 'Q1' },
      body: { reason: 'type is there' },
      ifMatch: true,
      unknown: { quarantine_id: '999999' },
    },
    {
      path: '/quarantine/{quarantine_id}/drop',
      params: { quarantine_id: 'Q3' },
      body: { reason: 'not ours' },
      ifMatch: true,
      unknown: { quarantine_id: '999999' },
    },
  ];
}

/** Quarantine ids are known after seeding: Q<n> names msg_q_<n>'s. */
function resolved(params: Record<string, string>): Record<string, string> {
  return Object.fromEntries(
    Object.entries(params).map(([name, value]) => [
      name,
      /^Q\d$/.test(value) ? quarantined[`msg_q_${value.slice(1)}`]! : value,
    ]),
  );
}

interface Send {
  readonly params?: Record<string, string>;
  readonly query?: Record<string, unknown>;
  readonly body?: unknown;
  readonly key?: string | null;
  readonly ifMatch?: string;
  readonly headers?: Record<string, string>;
  readonly rawBody?: string;
}

/** One action request through the generated client (the cases are data: their types are checked per route below). */
async function post(client: ApiClient, path: string, send: Send = {}) {
  const header: Record<string, string> = {};
  if (send.key !== null) header['Idempotency-Key'] = send.key ?? randomUUID();
  if (send.ifMatch !== undefined) header['If-Match'] = send.ifMatch;
  const init = {
    params: { path: send.params ?? {}, query: send.query ?? {}, header },
    ...(send.body !== undefined ? { body: send.body } : {}),
    headers: send.headers ?? {},
    ...(send.rawBody !== undefined ? { bodySerializer: () => send.rawBody } : {}),
  };
  const result = await client.POST(path as '/endpoints/{endpoint}/pause', init as never);
  return {
    status: result.response.status,
    data: result.data as components['schemas']['ActionResult'] | undefined,
    error: result.error as { type?: string; detail?: string } | undefined,
    response: result.response,
  };
}

describe('the management API against its OpenAPI document', () => {
  it('serves the committed document at /api/v1/openapi.json, without a token', async () => {
    const { data, response } = await anonymous.GET('/openapi.json');
    expect(response.status).toBe(200);
    expect(data).toEqual(openApiDocument());
  });

  it('answers every read with what the document says', async () => {
    expect((await ops.GET('/me')).data).toEqual({ name: 'ops', role: 'operator', via: 'token' });
    expect((await viewer.GET('/me')).data).toEqual({ name: 'view', role: 'viewer', via: 'token' });

    const tokens = await ops.GET('/tokens');
    expect(tokens.data?.items.map((t) => [t.name, t.role])).toEqual([
      ['ops', 'operator'],
      ['view', 'viewer'],
      ['limited', 'operator'],
    ]);
    expect(JSON.stringify(tokens.data)).not.toContain(sha(TOKENS.ops));

    const endpoints = await ops.GET('/endpoints');
    const shop = endpoints.data?.items.find((e) => e.name === 'shop');
    expect(shop).toMatchObject({
      provider: 'standard-webhooks',
      paused: false,
      dead: 6,
      parked: 3,
      pending: 0,
      quarantine_held: 6,
    });

    const stats = await ops.GET('/stats', { params: { query: { since: '2h' } } });
    const shopStats = stats.data?.endpoints.find((e) => e.endpoint === 'shop');
    expect(shopStats).toMatchObject({
      processed: 20,
      dead: 6,
      parked: 3,
      discarded: 1,
      accepted: 30,
      duplicate: 3,
    });
    expect(shopStats?.duplicate_rate).toBeCloseTo(3 / 33, 5);
    expect(stats.data?.destinations.find((d) => d.destination === 'ledger')).toMatchObject({ dead: 6 });
    expect(
      (await ops.GET('/stats', { params: { query: { endpoint: 'shop' } } })).data?.endpoints,
    ).toHaveLength(1);

    const event = await ops.GET('/events/{endpoint}/{event_id}', {
      params: { path: { endpoint: 'shop', event_id: 'evt_dead_3' } },
    });
    expect(event.data).toMatchObject({ status: 'dead', attempts: 3, event_type: 'order.paid' });
    expect(event.response.headers.get('etag')).toBe(event.data?.etag);
    expect(event.data?.timeline[0]?.what).toBe('received');
    expect(event.data?.destinations.map((d) => [d.destination, d.delivery?.status ?? null])).toEqual([
      ['ledger', 'dead'],
      ['crm', null],
    ]);

    const delivery = await ops.GET('/deliveries/{delivery_id}', { params: { path: { delivery_id: '1' } } });
    expect(delivery.data?.delivery).toMatchObject({ destination: 'ledger', status: 'dead' });
    expect(delivery.data?.attempt_history).toHaveLength(1);

    const destinations = await ops.GET('/destinations');
    expect(destinations.data?.items.map((d) => `${d.endpoint}/${d.destination}:${d.dead}`)).toEqual([
      'shop/crm:0',
      'shop/ledger:6',
    ]);

    const held = await ops.GET('/quarantine/{quarantine_id}', {
      params: { path: { quarantine_id: quarantined.msg_q_4! } },
    });
    expect(held.data?.quarantined).toMatchObject({ state: 'held', reason: 'event_type_missing' });
    expect(held.data?.body_text).toBe('{"kind":"x"}');
    expect(Buffer.from(held.data?.body_base64 ?? '', 'base64').toString()).toBe('{"kind":"x"}');

    const reconcile = await ops.GET('/reconcile');
    expect(reconcile.data?.items).toMatchObject([
      { endpoint: 'pay', running: false, waiting: false, runs_total: 0 },
    ]);
  });

  it('pages every list to its end, each item once, newest first', async () => {
    const events = (
      await allPages((cursor) =>
        ops.GET('/events', {
          params: { query: { endpoint: 'shop', limit: 7, ...(cursor ? { cursor } : {}) } },
        }),
      )
    ).map((e) => e.event_id);
    expect(events).toHaveLength(30);
    expect(new Set(events).size).toBe(30);
    expect(events[0]).toBe('evt_p_1');
    expect(events.at(-1)).toBe('evt_disc_1');
    // The CLI's filters, each through the index that answers it.
    const dead = await ops.GET('/events', { params: { query: { status: 'dead', endpoint: 'shop' } } });
    expect(dead.data?.items.map((e) => e.event_id).sort()).toEqual(
      [1, 2, 3, 4, 5, 6].map((n) => `evt_dead_${n}`),
    );
    const typed = await ops.GET('/events', {
      params: { query: { type: 'order.paid', since: '1h', until: new Date().toISOString(), limit: 500 } },
    });
    expect(typed.data?.items).toHaveLength(30);
    const byId = await ops.GET('/events', { params: { query: { event_id: 'evt_parked_2' } } });
    expect(byId.data?.items.map((e) => e.status)).toEqual(['parked']);
    const entity = await ops.GET('/events', { params: { query: { entity_id: 'ord_1' } } });
    expect(entity.data?.items.every((e) => e.entity_id === 'ord_1')).toBe(true);

    const deliveries = (
      await allPages((cursor) =>
        ops.GET('/deliveries', {
          params: {
            query: { endpoint: 'shop', destination: 'ledger', limit: 4, ...(cursor ? { cursor } : {}) },
          },
        }),
      )
    ).map((d) => d.id);
    expect(deliveries.map(Number)).toEqual(Array.from({ length: 13 }, (_, n) => 13 - n));
    const deadDeliveries = await ops.GET('/deliveries', {
      params: { query: { destination: 'ledger', status: 'dead', since: '1h' } },
    });
    expect(deadDeliveries.data?.items).toHaveLength(6);

    const held = (
      await allPages((cursor) =>
        ops.GET('/quarantine', {
          params: {
            query: {
              endpoint: 'shop',
              reason: 'event_type_missing',
              limit: 4,
              ...(cursor ? { cursor } : {}),
            },
          },
        }),
      )
    ).map((q) => `${q.endpoint}:${q.id}`);
    expect(held).toHaveLength(6);
    expect(new Set(held).size).toBe(6);

    const audit = (
      await allPages((cursor) =>
        ops.GET('/audit', {
          params: {
            query: { actor: 'alice', endpoint: 'shop', since: '1h', limit: 9, ...(cursor ? { cursor } : {}) },
          },
        }),
      )
    ).map((a) => a.id);
    expect(audit).toHaveLength(40);
    expect(audit.map(Number)).toEqual([...audit.map(Number)].sort((a, b) => b - a));
    const byCommand = await ops.GET('/audit', { params: { query: { command: 'discard', limit: 500 } } });
    expect(byCommand.data?.items.every((a) => a.command === 'discard')).toBe(true);
  });

  it('refuses reads it cannot answer, in the document’s words', async () => {
    const refusals: Array<[Promise<{ response: Response; error?: unknown }>, number, string]> = [
      [ops.GET('/events', { params: { query: { limit: 0 } } }), 400, 'usage_invalid'],
      [ops.GET('/events', { params: { query: { cursor: 'not-a-cursor' } } }), 400, 'usage_invalid'],
      [ops.GET('/events', { params: { query: { endpoint: 'nope' } } }), 404, 'endpoint_unknown'],
      [
        ops.GET('/events/{endpoint}/{event_id}', {
          params: { path: { endpoint: 'shop', event_id: 'evt_nope' } },
        }),
        404,
        'event_unknown',
      ],
      [
        ops.GET('/events/{endpoint}/{event_id}', {
          params: { path: { endpoint: 'shop', event_id: 'x'.repeat(513) } },
        }),
        400,
        'usage_invalid',
      ],
      [ops.GET('/stats', { params: { query: { since: 'yesterday' } } }), 400, 'usage_invalid'],
      [ops.GET('/stats', { params: { query: { endpoint: 'nope' } } }), 404, 'endpoint_unknown'],
      [ops.GET('/deliveries', { params: { query: { status: 'lost' as 'dead' } } }), 400, 'usage_invalid'],
      [ops.GET('/deliveries', { params: { query: { endpoint: 'nope' } } }), 404, 'endpoint_unknown'],
      [
        ops.GET('/deliveries/{delivery_id}', { params: { path: { delivery_id: '999999' } } }),
        404,
        'delivery_unknown',
      ],
      [
        ops.GET('/deliveries/{delivery_id}', { params: { path: { delivery_id: 'abc' } } }),
        400,
        'usage_invalid',
      ],
      [ops.GET('/destinations', { params: { query: { since: '-1h' } } }), 400, 'usage_invalid'],
      [ops.GET('/quarantine', { params: { query: { cursor: 'e30' } } }), 400, 'usage_invalid'],
      [ops.GET('/quarantine', { params: { query: { endpoint: 'nope' } } }), 404, 'endpoint_unknown'],
      [
        ops.GET('/quarantine/{quarantine_id}', { params: { path: { quarantine_id: '999999' } } }),
        404,
        'not_found',
      ],
      [
        ops.GET('/quarantine/{quarantine_id}', { params: { path: { quarantine_id: 'x' } } }),
        400,
        'usage_invalid',
      ],
      [ops.GET('/audit', { params: { query: { limit: 501 } } }), 400, 'usage_invalid'],
    ];
    for (const [index, [request, status, type]] of refusals.entries()) {
      const { response, error } = await request;
      expect([index, response.status, (error as { type?: string }).type]).toEqual([index, status, type]);
    }
    // Every read but the document needs a token this console knows.
    const sample: Record<string, string> = {
      endpoint: 'shop',
      event_id: 'evt_p_1',
      delivery_id: '1',
      quarantine_id: '1',
    };
    const reads = checker.operations.filter((o) => o.method === 'GET' && o.id !== 'getOpenApi');
    for (const client of [anonymous, stranger]) {
      for (const read of reads) {
        const path = Object.fromEntries(
          [...read.path.matchAll(/\{(\w+)\}/g)].map(([, name]) => [name, sample[name!]]),
        );
        const { response, error } = await client.GET(read.path as '/me', { params: { path } } as never);
        expect([read.id, response.status, (error as { type?: string }).type]).toEqual([
          read.id,
          401,
          'auth_required',
        ]);
        expect(response.headers.get('www-authenticate')).toBe('Bearer realm="hookgate"');
      }
    }
  });

  it('acts through every action route, dry run first, each audited as api:<token>', async () => {
    for (const action of actionCases()) {
      const params = resolved(action.params);
      const dry = await post(ops, action.path, { params, query: { dryRun: true }, body: action.body });
      expect([action.path, dry.status, dry.data?.dry_run]).toEqual([action.path, 200, true]);
      const real = await post(ops, action.path, { params, body: action.body });
      expect([action.path, real.status, real.data?.dry_run]).toEqual([
        action.path,
        action.path.endsWith('/reconcile') ? 202 : 200,
        false,
      ]);
      // The same answer shape; the dry run said what the run then did.
      expect(
        Object.keys(dry.data ?? {})
          .filter((k) => k !== 'outcomes')
          .sort(),
      ).toEqual(
        Object.keys(real.data ?? {})
          .filter((k) => k !== 'outcomes')
          .sort(),
      );
      expect([action.path, real.data?.count]).toEqual([action.path, dry.data?.count]);
      expect(real.data?.count, action.path).toBeGreaterThan(0);
    }
    const audit = await ops.GET('/audit', { params: { query: { actor: 'api:ops', limit: 500 } } });
    const rows = audit.data?.items ?? [];
    const commands = [
      'pause',
      'resume',
      'requeue',
      'discard',
      'reconcile start',
      'redeliver',
      'destination pause',
      'destination resume',
      'quarantine release',
      'quarantine drop',
    ];
    for (const command of commands) {
      expect([command, rows.some((r) => r.command === command && r.dry_run)]).toEqual([command, true]);
      expect([command, rows.some((r) => r.command === command && !r.dry_run)]).toEqual([command, true]);
    }
    expect(rows.find((r) => r.command === 'destination pause' && !r.dry_run)?.reason).toBe('ledger deploy');
    // What the actions did, read back.
    const requeued = await ops.GET('/events/{endpoint}/{event_id}', {
      params: { path: { endpoint: 'shop', event_id: 'evt_dead_1' } },
    });
    expect(requeued.data?.status).toBe('pending');
    expect(requeued.data?.actions.map((a) => `${a.actor} ${a.command}`)).toContain('api:ops requeue');
    const discarded = await ops.GET('/events/{endpoint}/{event_id}', {
      params: { path: { endpoint: 'shop', event_id: 'evt_dead_2' } },
    });
    expect(discarded.data).toMatchObject({
      status: 'discarded',
      discarded_by: 'api:ops',
      discard_reason: 'never valid',
    });
    const released = await ops.GET('/quarantine/{quarantine_id}', {
      params: { path: { quarantine_id: quarantined.msg_q_1! } },
    });
    expect(released.data?.quarantined).toMatchObject({
      state: 'released',
      settled_by: 'api:ops',
      settle_reason: 'type is there',
    });
    const claimed = await ops.GET('/events/{endpoint}/{event_id}', {
      params: { path: { endpoint: 'shop', event_id: 'msg_q_1' } },
    });
    expect(claimed.data?.event_type).toBe('order.created');
    const reconcile = await ops.GET('/reconcile');
    expect(reconcile.data?.items[0]).toMatchObject({ endpoint: 'pay', waiting: true });
  });

  it('keeps a delivery that still cannot become an event held, and says why', async () => {
    const id = quarantined.msg_q_2!;
    const read = await ops.GET('/quarantine/{quarantine_id}', { params: { path: { quarantine_id: id } } });
    const release = await post(ops, '/quarantine/{quarantine_id}/release', {
      params: { quarantine_id: id },
      ifMatch: read.data?.etag,
    });
    expect(release.data).toMatchObject({
      count: 0,
      ids: [],
      outcomes: [{ id, outcome: 'still_unusable', reason: 'event_type_missing' }],
    });
    const after = await ops.GET('/quarantine/{quarantine_id}', { params: { path: { quarantine_id: id } } });
    expect(after.data?.quarantined.state).toBe('held');
  });

  it('acts once per Idempotency-Key: a retry gets the first answer back and says so', async () => {
    const key = randomUUID();
    const send = { params: { endpoint: 'shop' }, key, body: { event_ids: ['evt_dead_4'] } };
    const first = await post(ops, '/endpoints/{endpoint}/requeue', send);
    const retry = await post(ops, '/endpoints/{endpoint}/requeue', send);
    expect(first.data).toMatchObject({ count: 1, ids: ['evt_dead_4'] });
    expect(retry.data).toEqual(first.data);
    expect(first.response.headers.get('idempotent-replayed')).toBeNull();
    expect(retry.response.headers.get('idempotent-replayed')).toBe('true');
    const runs = await db.pool.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM hookgate.audit WHERE actor = 'api:ops' AND command = 'requeue' AND NOT dry_run AND 'evt_dead_4' = ANY(event_ids)`,
    );
    expect(runs.rows[0]!.n).toBe(1);
    // A refusal is kept too: the retry is refused the same way, not acted on.
    const stale = {
      params: { endpoint: 'shop', event_id: 'evt_dead_5' },
      key: randomUUID(),
      ifMatch: '"stale"',
    };
    const refused = await post(ops, '/events/{endpoint}/{event_id}/requeue', stale);
    const refusedAgain = await post(ops, '/events/{endpoint}/{event_id}/requeue', stale);
    expect([
      refused.status,
      refused.error?.type,
      refusedAgain.status,
      refusedAgain.response.headers.get('idempotent-replayed'),
    ]).toEqual([412, 'precondition_failed', 412, 'true']);
  });

  it('refuses an action whose If-Match is not the state now, and acts with the one just read', async () => {
    const read = await ops.GET('/events/{endpoint}/{event_id}', {
      params: { path: { endpoint: 'shop', event_id: 'evt_dead_6' } },
    });
    const etag = read.data!.etag;
    const acted = await post(ops, '/events/{endpoint}/{event_id}/requeue', {
      params: { endpoint: 'shop', event_id: 'evt_dead_6' },
      ifMatch: etag,
    });
    expect(acted.data?.count).toBe(1);
    const again = await post(ops, '/events/{endpoint}/{event_id}/discard', {
      params: { endpoint: 'shop', event_id: 'evt_dead_6' },
      ifMatch: etag,
      body: { reason: 'x' },
    });
    expect([again.status, again.error?.type, again.response.headers.get('etag') === etag]).toEqual([
      412,
      'precondition_failed',
      false,
    ]);
  });

  it('refuses every action with each error the document names for it', async () => {
    for (const action of actionCases()) {
      const params = resolved(action.params);
      const expectProblem = async (
        result: Promise<{ status: number; error?: { type?: string } }>,
        status: number,
        type: string,
      ) => {
        const { status: got, error } = await result;
        expect([action.path, got, error?.type]).toEqual([action.path, status, type]);
      };
      await expectProblem(post(anonymous, action.path, { params, body: action.body }), 401, 'auth_required');
      await expectProblem(post(stranger, action.path, { params, body: action.body }), 401, 'auth_required');
      await expectProblem(post(viewer, action.path, { params, body: action.body }), 403, 'role_forbidden');
      await expectProblem(
        post(ops, action.path, { params, body: action.body, key: null }),
        400,
        'idempotency_key_missing',
      );
      await expectProblem(
        post(ops, action.path, { params, body: { ...action.body, bogus: 1 } }),
        400,
        'usage_invalid',
      );
      await expectProblem(
        post(ops, action.path, { params, query: { dryRun: 'maybe' } }),
        400,
        'usage_invalid',
      );
      await expectProblem(
        post(ops, action.path, { params, rawBody: '{"reason":', body: {} }),
        400,
        'request_malformed',
      );
      await expectProblem(
        post(ops, action.path, { params: resolved(action.unknown), body: action.body }),
        404,
        action.unknown.event_id
          ? 'event_unknown'
          : action.unknown.delivery_id
            ? 'delivery_unknown'
            : action.unknown.quarantine_id
              ? 'not_found'
              : action.unknown.destination
                ? 'destination_unknown'
                : 'endpoint_unknown',
      );
      await expectProblem(
        post(ops, action.path, { params, body: { reason: 'x'.repeat(70_000) } }),
        413,
        'body_too_large',
      );
      await expectProblem(
        post(ops, action.path, {
          params,
          rawBody: 'reason=x',
          body: {},
          headers: { 'content-type': 'application/x-www-form-urlencoded' },
        }),
        415,
        'media_type_unsupported',
      );
      // The same key with another request.
      const key = randomUUID();
      await post(ops, action.path, { params, query: { dryRun: true }, body: action.body, key });
      await expectProblem(
        post(ops, action.path, { params, query: { dryRun: false }, body: action.body, key }),
        422,
        'idempotency_key_reused',
      );
      // The key's first request still acting (its claim, as the request makes it, not answered yet).
      const busy = randomUUID();
      const url = `/api/v1${action.path.replace(/\{(\w+)\}/g, (_, name: string) => encodeURIComponent(params[name]!))}?dryRun=true`;
      await claimKey(db.pool, {
        token: 'ops',
        key: busy,
        digest: requestDigest({ method: 'POST', url, ifMatch: undefined, body: action.body }),
        now: new Date(),
        ttlMs: 86_400_000,
        lockMs: 600_000,
      });
      await expectProblem(
        post(ops, action.path, { params, query: { dryRun: true }, body: action.body, key: busy }),
        409,
        'idempotency_key_in_progress',
      );
      if (action.ifMatch)
        await expectProblem(
          post(ops, action.path, {
            params,
            query: { dryRun: true },
            body: action.body,
            ifMatch: '"not-the-state-now"',
          }),
          412,
          'precondition_failed',
        );
    }
  });

  it('holds each token to console.api.rateLimit requests a minute: 429 with Retry-After on every route', async () => {
    // One request a minute, the clock held still: the first request spends it.
    expect((await throttled.GET('/me')).response.status).toBe(200);
    for (const operation of checker.operations.filter((o) => o.id !== 'getOpenApi')) {
      const path = operation.path;
      const params = Object.fromEntries(
        [...path.matchAll(/\{(\w+)\}/g)].map(([, name]) => [name, name === 'endpoint' ? 'shop' : '1']),
      );
      const result =
        operation.method === 'GET'
          ? await throttled.GET(path as '/me', { params: { path: params } } as never)
          : await post(throttled, path, { params, query: { dryRun: true } });
      const response = 'response' in result ? result.response : (result as { response: Response }).response;
      expect([operation.id, response.status, response.headers.get('retry-after')]).toEqual([
        operation.id,
        429,
        '60',
      ]);
    }
  });

  it('answered nothing the document does not describe, and every answer it describes was given', () => {
    expect(checker.failures).toEqual([]);
    expect(checker.missing()).toEqual([]);
    const routes = new Set(checker.operations.map((o) => o.id));
    expect(routes.size).toBe(checker.operations.length);
    console.log(
      `api contract: ${checker.operations.length} operations, ${checker.documented().length} documented answers, ${checker.seen.length} answers checked`,
    );
  });
});
