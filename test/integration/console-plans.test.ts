import { createHash } from 'node:crypto';
import pg from 'pg';
import type { PgBoss } from 'pg-boss';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import type { paths } from '../../services/console/api/schema.ts';
import { type RunningConsole, startConsole } from '../../services/console/server.ts';
import { parseConfig } from '../../services/core/config/load.ts';
import { createBoss } from '../../services/core/queue/boss.ts';
import { apiClient } from '../support/api-client.ts';
import { silentLogger } from '../support/apply.ts';
import { CONSOLE_ENDPOINTS, consoleSearches, eventIdOf, fillConsoleInbox } from '../support/console-inbox.ts';
import { createTestDatabase, type TestDatabase } from '../support/database.ts';
import { SW_SECRET } from '../support/gateway.ts';
import { auditTargets, PreparedTarget, withParentIndexNames } from '../support/plans.ts';
import { recordStatements, type SentStatement } from '../support/statement-recorder.ts';

// The console's pages (and the management API's reads) on a grown inbox: every statement they
// send reads the inbox (and the counts) through an index, checked by EXPLAIN on the plans
// PostgreSQL makes for the values really sent (the console's statements are unnamed, so each
// execution is planned for its values). Statements are recorded as the console sends them while
// its pages are fetched over HTTP, not listed by hand. 200 000 rows, as the plan audit grows its
// tables: a scan of a table that size costs the planner far more than an index read of a page, so
// a plan that still scans has no index to use. The search times at a million rows and more belong
// to `make bench` (bench/console-search.ts); nothing here measures a time.

const ROWS = Number(process.env.CONSOLE_PLAN_ROWS ?? 200_000);
// Every endpoint but `rare` has the payload index (payloadSearch): a payload search on one of
// them reads the index, one over every endpoint reads by time (rare's rows are not in the index).
const SEARCHABLE: readonly string[] = CONSOLE_ENDPOINTS.filter((name) => name !== 'rare');
const TOKEN = 'console-plan-test-token-0123456789abcdef';

let db: TestDatabase;
let boss: PgBoss;
let console_: RunningConsole;
let sent: SentStatement[] = [];

async function get(path: string): Promise<{ status: number; text: string }> {
  const response = await fetch(new URL(path, console_.url), {
    headers: { authorization: `Bearer ${TOKEN}` },
  });
  const text = await response.text();
  return { status: response.status, text };
}

const pageOf = (query: Record<string, string>) => `/events?${new URLSearchParams(query).toString()}`;

beforeAll(async () => {
  db = await createTestDatabase();
  const client = new pg.Client({ connectionString: db.url });
  await client.connect();
  try {
    await fillConsoleInbox(client, ROWS, undefined, SEARCHABLE);
  } finally {
    await client.end();
  }
  const config = parseConfig(
    {
      endpoints: Object.fromEntries(
        CONSOLE_ENDPOINTS.map((name) => [
          name,
          { provider: 'standard-webhooks', secrets: [SW_SECRET], payloadSearch: SEARCHABLE.includes(name) },
        ]),
      ),
      console: {
        port: 0,
        sessionSecret: 'plan-test-session-secret-0123456789abcdef',
        tokens: [{ name: 'plans', sha256: createHash('sha256').update(TOKEN).digest('hex') }],
        queryTimeout: '30s',
      },
    },
    {},
  );
  boss = createBoss({
    connectionString: db.url,
    max: 2,
    supervise: false,
    applicationName: 'console-plan-test',
  });
  boss.on('error', () => {});
  await boss.start();
  console_ = await startConsole({
    config,
    databaseUrl: db.url,
    boss,
    logger: silentLogger,
    embedded: false,
    env: {},
  });

  const recorder = recordStatements();
  try {
    // Every page and every kind of search, twice with different values, and their next pages.
    for (const seed of [1, 2]) {
      for (const search of consoleSearches(ROWS, seed)) {
        const first = await get(pageOf(search.query));
        expect(first.status, `${search.name}: ${first.text.slice(0, 500)}`).toBe(200);
        const next = /<a class="button secondary" rel="next" href="([^"]+)"/.exec(first.text)?.[1];
        if (next) expect((await get(next.replaceAll('&amp;', '&'))).status).toBe(200);
      }
    }
    expect((await get('/')).status).toBe(200);
    expect((await get(`/events/stripe/${eventIdOf(1)}`)).status).toBe(200);
    expect((await get(`/events/rare/${eventIdOf(1_000)}`)).status).toBe(200);
    const preview = await fetch(new URL('/actions/requeue/preview', console_.url), {
      method: 'POST',
      headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ endpoint: 'github', status: 'dead' }).toString(),
    });
    expect(preview.status).toBe(200);
    expect(await preview.text()).toMatch(/Would put \d+ dead events of github back to pending/);
    // The management API's lists on the same inbox: its events list is the console's search (the
    // CLI's filters: no payload containment), each with its next page.
    const api = apiClient(console_.url, TOKEN);
    for (const seed of [1, 2]) {
      for (const search of consoleSearches(ROWS, seed)) {
        if (search.query.contains !== undefined) continue;
        const query = search.query as NonNullable<paths['/events']['get']['parameters']['query']>;
        const first = await api.GET('/events', { params: { query } });
        expect(first.response.status, `${search.name}: ${JSON.stringify(first.error)}`).toBe(200);
        const cursor = first.data?.next_cursor;
        if (cursor)
          expect(
            (await api.GET('/events', { params: { query: { ...query, cursor } } })).response.status,
          ).toBe(200);
      }
    }
    expect((await api.GET('/endpoints')).response.status).toBe(200);
    expect((await api.GET('/stats')).response.status).toBe(200);
    expect(
      (
        await api.GET('/events/{endpoint}/{event_id}', {
          params: { path: { endpoint: 'stripe', event_id: eventIdOf(1) } },
        })
      ).response.status,
    ).toBe(200);
  } finally {
    recorder.stop();
  }
  sent = recorder.sent;
}, 600_000);

afterAll(async () => {
  await console_?.stop();
  await boss?.stop({ graceful: false, close: true });
  await db?.drop();
});

const INDEX_OF: ReadonlyArray<[RegExp, RegExp]> = [
  [/payload @> \$7::jsonb AND payload_search AND/, /inbox_payload_path_idx/],
  [/WHERE entity_id = \$6::text AND/, /inbox_entity_idx/],
  [/endpoint = wanted\.name AND status = 'dead'/, /inbox_stuck_idx/],
  [/endpoint = wanted\.name AND status = 'pending'/, /inbox_pending_idx/],
  [/endpoint = ANY \(\$13::text\[\]\) AND event_id = \$14/, /inbox_key_idx/],
  [/FROM hookgate\.inbox\s+WHERE \(\$4::timestamptz IS NULL/, /inbox_received_at_idx/],
];

// The tables this file grows: a scan of any other (tiny here) says nothing about its size. The
// per-endpoint state tables are as large as the configuration; the quarantine and audit pages
// have their own plan test (console-quarantine-audit-plans.test.ts).
const GROWN_HERE = ['hookgate.inbox', 'hookgate.delivery_counts'];

describe(`the console on an inbox of ${ROWS} rows`, () => {
  it('reads the inbox and the counts through indexes in every statement its pages send', async () => {
    const targets = auditTargets(sent).filter((target) => /hookgate\./.test(target.text));
    // The premise: every kind of statement ran.
    for (const [text] of INDEX_OF)
      expect(
        targets.some((t) => text.test(t.text)),
        String(text),
      ).toBe(true);
    expect(targets.some((t) => /delivery_counts/.test(t.text))).toBe(true);

    const client = new pg.Client({ connectionString: db.url });
    await client.connect();
    const findings: string[] = [];
    let major = 0;
    try {
      major = Math.floor(
        Number(
          (await client.query<{ server_version_num: string }>('SHOW server_version_num')).rows[0]!
            .server_version_num,
        ) / 10_000,
      );
      const expected = inject('postgresMajor');
      if (expected !== null) expect(major).toBe(expected);
      for (const [index, target] of targets.entries()) {
        const statement = new PreparedTarget(client, target, `console_${index}`);
        await statement.prepare();
        const explained = await statement.explain('force_custom_plan');
        const plan = { ...explained, text: await withParentIndexNames(client, explained.text) };
        const scans = plan.scans.filter((table) => GROWN_HERE.includes(table));
        if (scans.length > 0)
          findings.push(`scans ${scans.join(', ')}\n${target.text.trim()}\n--- plan ---\n${plan.text}`);
        for (const [text, index_] of INDEX_OF) {
          if (text.test(target.text) && !index_.test(plan.text)) {
            findings.push(`does not use ${index_}\n${target.text.trim()}\n--- plan ---\n${plan.text}`);
          }
        }
      }
    } finally {
      await client.end();
    }
    console.log(
      `console on PostgreSQL ${major}, ${ROWS} inbox rows: ${targets.length} statements planned, ${findings.length} findings`,
    );
    expect(findings, findings.join('\n\n========\n\n')).toEqual([]);
  }, 600_000);
});
