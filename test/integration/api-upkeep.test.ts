import { randomUUID } from 'node:crypto';
import type { PgBoss } from 'pg-boss';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type RunningConsole, startConsole } from '../../services/console/server.ts';
import { claimKey } from '../../services/core/api/idempotency.ts';
import { recordTokenUse } from '../../services/core/api/token-use.ts';
import { parseConfig } from '../../services/core/config/load.ts';
import { createBoss } from '../../services/core/queue/boss.ts';
import { type ApiClient, apiClient } from '../support/api-client.ts';
import { silentLogger } from '../support/apply.ts';
import { runCliInProcess } from '../support/cli.ts';
import { createTestDatabase, type TestDatabase } from '../support/database.ts';
import { SW_SECRET } from '../support/gateway.ts';
import { writeConfigFile } from '../support/worker-harness.ts';

// What the API keeps, and for how long: a token made by `hookgate console new-token` works with
// the role it was made for and is listed with its last use (by the API and by `hookgate console
// tokens`), written at most once a minute; last-use rows of tokens no longer configured are
// forgotten when a console starts; Idempotency-Keys are kept console.api.idempotencyTtl, after
// which the key acts again and its row is deleted. The API's clock is the test's (startConsole's
// `now`): nothing here waits for time to pass.

let db: TestDatabase;
let boss: PgBoss;
let running: RunningConsole;
// Now, to the minute (a console with the real clock, the demo's, prunes by the real time).
let clock = Math.floor(Date.now() / 60_000) * 60_000;
let viewerToken: string;
let operatorToken: string;
let configFile: string;
let ops: ApiClient;

const HOUR = 3_600_000;
const lastUse = async (name: string) =>
  (
    await db.pool.query<{ at: Date }>(
      `SELECT last_used_at AS at FROM hookgate.api_token_use WHERE token = $1`,
      [name],
    )
  ).rows[0]?.at.toISOString() ?? null;

beforeAll(async () => {
  db = await createTestDatabase();
  boss = createBoss({ connectionString: db.url, max: 2, supervise: false, applicationName: 'api-upkeep' });
  boss.on('error', () => {});
  await boss.start();
  const made = async (name: string, role?: string) => {
    const run = await runCliInProcess([
      'console',
      'new-token',
      '--name',
      name,
      ...(role ? ['--role', role] : []),
      '--json',
    ]);
    expect(run.code, run.output).toBe(0);
    return JSON.parse(run.stdout) as { name: string; role: string; sha256: string; token: string };
  };
  const viewer = await made('dashboard', 'viewer');
  const operator = await made('ci');
  expect(operator.role).toBe('operator');
  expect(viewer.token).toMatch(/^hgt_[A-Za-z0-9_-]{43}$/);
  viewerToken = viewer.token;
  operatorToken = operator.token;
  const human = await runCliInProcess(['console', 'new-token', '--name', 'someone']);
  expect(human.stdout).toMatch(/^ {2}hgt_\S{43}$/m);
  expect(human.stdout).toMatch(/^ {2}- name: someone\n {4}sha256: [0-9a-f]{64}\n {4}role: operator$/m);
  const document = {
    endpoints: { shop: { provider: 'standard-webhooks', secrets: [SW_SECRET] } },
    console: {
      port: 0,
      sessionSecret: 'api-upkeep-test-session-secret-0123456789',
      tokens: [
        { name: viewer.name, sha256: viewer.sha256, role: viewer.role },
        { name: operator.name, sha256: operator.sha256, role: operator.role },
      ],
    },
  };
  configFile = writeConfigFile(document);
  // Before the console starts: a last use of a token since removed, and a key past its 24 hours.
  await recordTokenUse(db.pool, { token: 'removed', at: new Date(clock - HOUR), source: '10.0.0.9' });
  await claimKey(db.pool, {
    token: 'ci',
    key: 'stale-key',
    digest: Buffer.alloc(32),
    now: new Date(clock - 25 * HOUR),
    ttlMs: 24 * HOUR,
    lockMs: 60_000,
  });
  await claimKey(db.pool, {
    token: 'ci',
    key: 'fresh-key',
    digest: Buffer.alloc(32),
    now: new Date(clock - HOUR),
    ttlMs: 24 * HOUR,
    lockMs: 60_000,
  });
  running = await startConsole({
    config: parseConfig(document, {}),
    databaseUrl: db.url,
    boss,
    logger: silentLogger,
    embedded: false,
    env: {},
    now: () => clock,
  });
  ops = apiClient(running.url, operatorToken);
});

afterAll(async () => {
  await running?.stop();
  await boss?.stop({ graceful: false, close: true });
  await db?.drop();
});

async function until(what: string, check: () => Promise<boolean>): Promise<void> {
  for (let n = 0; n < 600; n += 1) {
    if (await check()) return;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  throw new Error(`never: ${what}`);
}

describe('what the API keeps', () => {
  it('works a token with its role, lists it without its secret, and its last use to the minute', async () => {
    const viewer = apiClient(running.url, viewerToken);
    expect((await viewer.GET('/me')).data).toEqual({ name: 'dashboard', role: 'viewer', via: 'token' });
    const refused = await viewer.POST('/endpoints/{endpoint}/pause', {
      params: { path: { endpoint: 'shop' }, header: { 'Idempotency-Key': randomUUID() } },
    });
    expect(refused.response.status).toBe(403);
    await until(
      'the first use recorded',
      async () => (await lastUse('dashboard')) === new Date(clock).toISOString(),
    );
    const first = new Date(clock).toISOString();
    // Within the minute: not written again (the row keeps the first use).
    clock += 30_000;
    await viewer.GET('/me');
    await ops.GET('/me');
    await until('ci recorded', async () => (await lastUse('ci')) !== null);
    expect(await lastUse('dashboard')).toBe(first);
    // A minute on: written.
    clock += 31_000;
    await viewer.GET('/me');
    await until(
      'the later use recorded',
      async () => (await lastUse('dashboard')) === new Date(clock).toISOString(),
    );

    const listed = await ops.GET('/tokens');
    expect(listed.data?.items).toEqual([
      {
        name: 'dashboard',
        role: 'viewer',
        last_used_at: new Date(clock).toISOString(),
        last_source: '127.0.0.1',
      },
      { name: 'ci', role: 'operator', last_used_at: expect.any(String), last_source: '127.0.0.1' },
    ]);
    const cli = await runCliInProcess(['console', 'tokens', '--config', configFile], {
      DATABASE_URL: db.url,
    });
    expect(cli.code, cli.output).toBe(0);
    expect(cli.stdout).toMatch(
      new RegExp(`^dashboard\\s+viewer\\s+${new Date(clock).toISOString()}\\s+127\\.0\\.0\\.1\\s*$`, 'm'),
    );
    expect(cli.stdout).not.toContain(viewerToken);
    expect(cli.stdout).not.toMatch(/[0-9a-f]{64}/);
  });

  it('answers the embedded demo on loopback without a token, as its console signs nobody in', async () => {
    const demo = await startConsole({
      config: parseConfig(
        {
          endpoints: { shop: { provider: 'standard-webhooks', secrets: [SW_SECRET] } },
          console: { port: 0 },
        },
        {},
      ),
      databaseUrl: db.url,
      boss,
      logger: silentLogger,
      embedded: true,
      env: {},
    });
    try {
      expect(demo.demo).toBe(true);
      expect((await apiClient(demo.url, null).GET('/me')).data).toEqual({
        name: 'demo',
        role: 'operator',
        via: 'demo',
      });
      // A token it does not know is still refused: the demo opens the API only to requests that send none.
      expect((await apiClient(demo.url, 'not-a-token-of-this-console').GET('/me')).response.status).toBe(401);
    } finally {
      await demo.stop();
    }
  });

  it('forgets the last use of a token the configuration no longer names, when a console starts', async () => {
    await until('removed forgotten', async () => (await lastUse('removed')) === null);
  });

  it('deletes Idempotency-Keys past console.api.idempotencyTtl, and lets a key act again once expired', async () => {
    const keys = async () =>
      (
        await db.pool.query<{ key: string }>(
          `SELECT key FROM hookgate.api_idempotency WHERE token = 'ci' ORDER BY key`,
        )
      ).rows.map((row) => row.key);
    await until('stale-key deleted', async () => !(await keys()).includes('stale-key'));
    expect(await keys()).toContain('fresh-key');
    const key = randomUUID();
    const pause = (reason: string) =>
      ops.POST('/endpoints/{endpoint}/pause', {
        params: { path: { endpoint: 'shop' }, query: { dryRun: true }, header: { 'Idempotency-Key': key } },
        body: { reason },
      });
    expect((await pause('first')).response.status).toBe(200);
    expect((await pause('second')).response.status).toBe(422);
    // 25 hours on, the same key is a new action.
    clock += 25 * HOUR;
    const again = await pause('second');
    expect([again.response.status, again.response.headers.get('idempotent-replayed')]).toEqual([200, null]);
  });
});
