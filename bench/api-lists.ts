// The management API's list routes on a large database: an inbox of BENCH_API_ROWS (1 000 000)
// rows (test/support/console-inbox.ts, as the console search benchmark fills it), with deliveries,
// audit rows and quarantined deliveries beside it, each route (and each events filter, and a next
// page) requested over HTTP against an in-process console, BENCH_API_RUNS times with varied
// values after one unmeasured round. The goal is a p95 of at most 50 ms per route. Absolute times
// say as much about the machine as about the API, so each round also asks GET /me (a token's
// check and a JSON answer, no statement): its p95 is the floor of this run, and each route's p95
// is printed beside its ratio to it and its excess over it.
import { createHash } from 'node:crypto';
import pg from 'pg';
import { startConsole } from '../services/console/server.ts';
import { parseConfig } from '../services/core/config/load.ts';
import { createLogger } from '../services/core/logging.ts';
import { createBoss } from '../services/core/queue/boss.ts';
import { CONSOLE_ENDPOINTS, consoleSearches, fillConsoleInbox } from '../test/support/console-inbox.ts';
import type { BenchDatabase } from './processes.ts';

const TOKEN = 'api-lists-bench-token-0123456789abcdef0123';
const GOAL_MS = 50;
const FLOOR = 'GET /me (no statement: the floor)';

export interface ApiListsOptions {
  /** Inbox rows. */
  readonly rows: number;
  /** Requests of each route (each with other values where it takes any). */
  readonly runs: number;
}

interface Figures {
  readonly p50: number;
  readonly p95: number;
}

export interface ApiListsReport {
  readonly rows: number;
  /** GET /me in the same rounds: the HTTP and the console without any statement. */
  readonly floor: Figures;
  readonly sides: { readonly deliveries: number; readonly audit: number; readonly quarantine: number };
  readonly routes: Record<string, Figures>;
  /** Routes whose p95 passed the goal. */
  readonly over: string[];
}

function percentile(values: readonly number[], q: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(sorted.length * q) - 1))]!;
}

/** The other tables the lists read, at sizes months of traffic leave them. */
async function fillSides(client: pg.Client, rows: number) {
  const deliveries = Math.max(1_000, Math.floor(rows / 10));
  const audit = Math.max(1_000, Math.floor(rows / 10));
  const quarantine = Math.max(1_000, Math.floor(rows / 20));
  await client.query(
    `INSERT INTO hookgate.destination_deliveries (endpoint, destination, event_id, event_type, webhook_id, status,
                                                  attempts, http_status, last_error, created_at, last_attempt_at,
                                                  next_attempt_at, settled_at)
     SELECT 'stripe', CASE WHEN n % 4 = 0 THEN 'crm' ELSE 'ledger' END, 'evt_' || lpad((3 * n + 1)::text, 9, '0'),
            'invoice.paid', 'msg_' || n, CASE WHEN n % 500 = 0 THEN 'dead' ELSE 'delivered' END,
            CASE WHEN n % 500 = 0 THEN 11 ELSE 1 END, CASE WHEN n % 500 = 0 THEN 503 ELSE 204 END,
            CASE WHEN n % 500 = 0 THEN 'HTTP 503' END, now() - ($1::int - n) * interval '25 seconds',
            now() - ($1::int - n) * interval '25 seconds', now(), now() - ($1::int - n) * interval '25 seconds'
       FROM generate_series(1, $1::int) AS n`,
    [deliveries],
  );
  await client.query(
    `INSERT INTO hookgate.audit (at, actor, command, endpoint, filters, count, dry_run, event_ids)
     SELECT now() - ($1::int - n) * interval '20 seconds',
            (ARRAY['api:ci', 'console:alice', 'bob', 'api:oncall'])[1 + n % 4],
            (ARRAY['requeue', 'discard', 'redeliver', 'pause', 'quarantine drop'])[1 + n % 5],
            (ARRAY['github', 'rare', 'shop', 'stripe'])[1 + n % 4], '{}', 1, n % 3 = 0, ARRAY['evt_' || n]
       FROM generate_series(1, $1::int) AS n`,
    [audit],
  );
  await client.query(
    `INSERT INTO hookgate.quarantine (endpoint, received_at, reason, message, body, headers, body_digest,
                                      released_at, dropped_at, settled_by)
     SELECT (ARRAY['github', 'rare', 'shop', 'stripe'])[1 + n % 4], now() - ($1::int - n) * interval '50 seconds',
            (ARRAY['event_type_missing', 'event_id_invalid'])[1 + n % 2], 'bench', '\\x7b7d'::bytea, '{}',
            sha256(('q' || n)::bytea),
            CASE WHEN n % 100 <> 0 AND n % 2 = 0 THEN now() END, CASE WHEN n % 100 <> 0 AND n % 2 = 1 THEN now() END,
            CASE WHEN n % 100 <> 0 THEN 'alice' END
       FROM generate_series(1, $1::int) AS n`,
    [quarantine],
  );
  await client.query('ANALYZE hookgate.destination_deliveries, hookgate.audit, hookgate.quarantine');
  return { deliveries, audit, quarantine };
}

/** One round of every list route; `seed` varies the values (and the events searches). */
function requests(rows: number, seed: number): Array<{ name: string; path: string }> {
  const events = consoleSearches(rows, seed)
    .filter((search) => search.query.contains === undefined)
    .map((search) => ({
      name: `GET /events (${search.name})`,
      path: `/events?${new URLSearchParams(search.query)}`,
    }));
  const actor = ['api:ci', 'console:alice', 'bob', 'api:oncall'][seed % 4]!;
  const endpoint = CONSOLE_ENDPOINTS[seed % CONSOLE_ENDPOINTS.length]!;
  return [
    { name: FLOOR, path: '/me' },
    ...events,
    { name: 'GET /endpoints', path: '/endpoints' },
    { name: 'GET /destinations', path: '/destinations' },
    { name: 'GET /deliveries (destination)', path: '/deliveries?endpoint=stripe&destination=ledger' },
    { name: 'GET /deliveries (dead)', path: '/deliveries?endpoint=stripe&destination=ledger&status=dead' },
    { name: 'GET /deliveries (newest)', path: '/deliveries' },
    { name: 'GET /quarantine (held)', path: '/quarantine' },
    {
      name: 'GET /quarantine (endpoint, reason)',
      path: `/quarantine?endpoint=${endpoint}&reason=event_type_missing`,
    },
    { name: 'GET /audit (newest)', path: '/audit' },
    { name: 'GET /audit (actor)', path: `/audit?actor=${encodeURIComponent(actor)}` },
    { name: 'GET /audit (endpoint, since)', path: `/audit?endpoint=${endpoint}&since=2h` },
    { name: 'GET /reconcile', path: '/reconcile' },
    { name: 'GET /tokens', path: '/tokens' },
  ];
}

/** Lists whose second page is measured too (from the first page's next_cursor). */
const PAGED = [
  'GET /events (newest)',
  'GET /events (endpoint)',
  'GET /deliveries (destination)',
  'GET /audit (newest)',
  'GET /quarantine (held)',
];

export async function apiListsScenario(
  database: BenchDatabase,
  options: ApiListsOptions,
): Promise<ApiListsReport> {
  const config = parseConfig(
    {
      endpoints: Object.fromEntries(
        CONSOLE_ENDPOINTS.map((name) => [
          name,
          {
            provider: 'standard-webhooks',
            secrets: ['whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw'],
            ...(name === 'stripe'
              ? {
                  destinations: {
                    ledger: { url: 'http://127.0.0.1:9/ledger' },
                    crm: { url: 'http://127.0.0.1:9/crm' },
                  },
                }
              : {}),
          },
        ]),
      ),
      console: {
        port: 0,
        sessionSecret: 'bench-session-secret-0123456789abcdef0123',
        tokens: [{ name: 'bench', sha256: createHash('sha256').update(TOKEN).digest('hex') }],
        queryTimeout: '30s',
        api: { rateLimit: 100_000 },
      },
    },
    {},
  );
  const client = new pg.Client({ connectionString: database.url });
  await client.connect();
  let sides: ApiListsReport['sides'];
  try {
    await fillConsoleInbox(client, options.rows);
    sides = await fillSides(client, options.rows);
  } finally {
    await client.end();
  }
  const boss = createBoss({
    connectionString: database.url,
    max: 2,
    supervise: false,
    applicationName: 'bench-api',
  });
  boss.on('error', () => {});
  await boss.start();
  const running = await startConsole({
    config,
    databaseUrl: database.url,
    boss,
    logger: createLogger('silent'),
    embedded: false,
    env: {},
  });
  const base = new URL('api/v1', running.url).toString();
  const timings = new Map<string, number[]>();
  const get = async (path: string) => {
    const started = performance.now();
    const response = await fetch(`${base}${path}`, { headers: { authorization: `Bearer ${TOKEN}` } });
    const body = (await response.json()) as { next_cursor?: string | null };
    if (response.status !== 200) throw new Error(`${path}: HTTP ${response.status} ${JSON.stringify(body)}`);
    return { ms: performance.now() - started, body };
  };
  try {
    // One round unmeasured: the first reads of fresh tables come from disk.
    for (let seed = 0; seed <= options.runs; seed += 1) {
      for (const request of requests(options.rows, seed)) {
        const first = await get(request.path);
        const record = (name: string, ms: number) => {
          if (seed > 0) timings.set(name, [...(timings.get(name) ?? []), ms]);
        };
        record(request.name, first.ms);
        if (PAGED.includes(request.name) && first.body.next_cursor) {
          const separator = request.path.includes('?') ? '&' : '?';
          const next = await get(
            `${request.path}${separator}cursor=${encodeURIComponent(first.body.next_cursor)}`,
          );
          record(`${request.name}, next page`, next.ms);
        }
      }
    }
  } finally {
    await running.stop();
    await boss.stop({ graceful: false, close: true });
  }
  const { [FLOOR]: floor, ...routes } = Object.fromEntries(
    [...timings.entries()].map(([name, values]) => [
      name,
      { p50: percentile(values, 0.5), p95: percentile(values, 0.95) },
    ]),
  );
  return {
    rows: options.rows,
    floor: floor!,
    sides,
    routes,
    over: Object.entries(routes)
      .filter(([, figures]) => figures.p95 > GOAL_MS)
      .map(([name]) => name),
  };
}

export function renderApiLists(report: ApiListsReport): string[] {
  return [
    `management API lists (HTTP, ms) on ${report.rows} inbox rows, ${report.sides.deliveries} deliveries, ${report.sides.audit} audit rows, ${report.sides.quarantine} quarantined (goal: p95 <= ${GOAL_MS} ms):`,
    `  ${'route'.padEnd(52)}${'p50'.padStart(9)}${'p95'.padStart(9)}${'p95/floor'.padStart(11)}${'p95-floor'.padStart(11)}`,
    `  ${FLOOR.padEnd(52)}${report.floor.p50.toFixed(1).padStart(9)}${report.floor.p95.toFixed(1).padStart(9)}`,
    ...Object.entries(report.routes).map(
      ([name, figures]) =>
        `  ${name.padEnd(52)}${figures.p50.toFixed(1).padStart(9)}${figures.p95.toFixed(1).padStart(9)}${(figures.p95 / report.floor.p95).toFixed(2).padStart(11)}${(figures.p95 - report.floor.p95).toFixed(1).padStart(11)}${figures.p95 > GOAL_MS ? '  over' : ''}`,
    ),
    report.over.length === 0
      ? `  every route's p95 <= ${GOAL_MS} ms`
      : `  over the goal: ${report.over.join('; ')}`,
  ];
}
