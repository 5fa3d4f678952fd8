import { createHash } from 'node:crypto';
import type { PgBoss } from 'pg-boss';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type RunningConsole, startConsole } from '../../services/console/server.ts';
import { parseConfig } from '../../services/core/config/load.ts';
import { jsonDepth } from '../../services/core/json-text.ts';
import { createBoss } from '../../services/core/queue/boss.ts';
import { silentLogger } from '../support/apply.ts';
import { runCliInProcess } from '../support/cli.ts';
import { createTestDatabase, type TestDatabase } from '../support/database.ts';
import { post, standardWebhook } from '../support/deliveries.ts';
import { SW_SECRET, startTestGateway, type TestGateway } from '../support/gateway.ts';

// A signed payload nested 6 000 levels deep, and one as deep as jsonb stores at all, are accepted
// and stored like any other; the console's event page and `hookgate events show` (text and
// --json) show them instead of failing on JSON.stringify's recursion.
const TOKEN = 'deep-payload-console-token-0123456789abcdef';

let db: TestDatabase;
let gateway: TestGateway;
let boss: PgBoss;
let consoleServer: RunningConsole;
/** The deepest `data` the claim stores in the body below, found by delivering. */
let deepest = 0;

const body = (type: string, depth: number) =>
  `{"type":"${type}","data":${'['.repeat(depth)}"bottom"${']'.repeat(depth)}}`;

/** Posts a signed delivery `depth` arrays deep: `accepted`, or why it was quarantined. */
async function deliver(depth: number): Promise<unknown> {
  const reply = await post(
    `${gateway.url}/webhooks/alpha`,
    standardWebhook(SW_SECRET, { eventId: `msg_deep_${depth}`, body: body('deep', depth) }),
  );
  expect(reply.status, `${depth} levels: ${JSON.stringify(reply.json)}`).toBe(200);
  return reply.json.status === 'quarantined' ? reply.json.reason : reply.json.status;
}

beforeAll(async () => {
  db = await createTestDatabase();
  const config = parseConfig(
    {
      claim: { maxWait: '2ms' },
      server: { bodyLimit: '24mib', maxBufferedBytes: '128mib' },
      endpoints: { alpha: { provider: 'standard-webhooks', secrets: [SW_SECRET] } },
      console: {
        port: 0,
        sessionSecret: 'deep-payload-session-secret-0123456789abcd',
        tokens: [{ name: 'ci', sha256: createHash('sha256').update(TOKEN).digest('hex') }],
      },
    },
    {},
  );
  gateway = await startTestGateway(db.url, config);
  boss = createBoss({ connectionString: db.url, max: 2, supervise: false, applicationName: 'deep-payload' });
  boss.on('error', () => {});
  await boss.start();
  consoleServer = await startConsole({
    config,
    databaseUrl: db.url,
    boss,
    logger: silentLogger,
    embedded: false,
    env: {},
  });
});

afterAll(async () => {
  await consoleServer?.stop();
  await gateway?.stop();
  await boss?.stop({ graceful: false, close: true });
  await db?.drop();
});

describe('payloads nested as deep as jsonb stores', () => {
  const cases = () => [
    { id: 'msg_deep_6000', depth: 6_000 },
    { id: `msg_deep_${deepest}`, depth: deepest },
  ];

  it("accepts a signed delivery 6 000 levels deep, and any up to jsonb's bound; one deeper is quarantined", async () => {
    expect(await deliver(6_000)).toBe('accepted');
    // jsonb's nesting is bounded by PostgreSQL's stack (max_stack_depth): found by delivering.
    let low = 6_000;
    let high = 200_000;
    expect(await deliver(high)).toBe('payload_unstorable');
    while (high - low > 1) {
      const middle = Math.floor((low + high) / 2);
      if ((await deliver(middle)) === 'accepted') low = middle;
      else high = middle;
    }
    deepest = low;
    console.log(`the claim stores payloads up to ${deepest} nested arrays under the body's object here`);
    expect(deepest).toBeGreaterThan(6_000);
    expect(await deliver(deepest + 1)).toBe('payload_unstorable');
    const stored = await db.pool.query(
      "SELECT event_id FROM hookgate.inbox WHERE endpoint = 'alpha' AND event_id = ANY($1::text[])",
      [cases().map((c) => c.id)],
    );
    expect(stored.rows.map((row) => row.event_id).sort()).toEqual(
      cases()
        .map((c) => c.id)
        .sort(),
    );
  });

  it("the console's event page shows each payload whole and says how deep it is", async () => {
    for (const { id, depth } of cases()) {
      const page = await fetch(new URL(`/events/alpha/${id}`, consoleServer.url), {
        headers: { authorization: `Bearer ${TOKEN}` },
      });
      const html = await page.text();
      expect([id, page.status]).toEqual([id, 200]);
      expect(html).toContain(`nested ${depth + 1} levels deep, levels past 64 shown on one line`);
      expect(html.replace(/\s/g, '')).toContain(`${'['.repeat(depth)}&quot;bottom&quot;${']'.repeat(depth)}`);
    }
  });

  it('`hookgate events show` prints each payload, in text and as --json', async () => {
    const env = { DATABASE_URL: db.url };
    for (const { id, depth } of cases()) {
      const text = await runCliInProcess(['events', 'show', id, '--endpoint', 'alpha'], env);
      expect([id, text.code]).toEqual([id, 0]);
      expect(text.stderr).not.toMatch(/Error|stack/);
      expect(text.stdout).toContain(
        `(nested ${depth + 1} levels deep: levels past 64 are printed on one line)`,
      );
      expect(text.stdout.replace(/\s/g, '')).toContain(`${'['.repeat(depth)}"bottom"${']'.repeat(depth)}`);
      const json = await runCliInProcess(['events', 'show', id, '--endpoint', 'alpha', '--json'], env);
      expect([id, json.code]).toEqual([id, 0]);
      const parsed = JSON.parse(json.stdout) as { payload: unknown };
      expect(jsonDepth(parsed.payload)).toBe(depth + 1);
    }
  });
});
