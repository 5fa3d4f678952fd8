import { generateKeyPairSync, randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseConfig } from '../../services/core/config/load.ts';
import { createTestDatabase, type TestDatabase } from '../support/database.ts';
import {
  type FakeGithub,
  type GithubDelivery,
  startFakeGithubHookDeliveries,
} from '../support/fake-provider-apis.ts';
import { runHookgate } from '../support/process.ts';
import { Claimer, writeConfigFile } from '../support/worker-harness.ts';

// GitHub never retries a refused delivery, and events reach hookgate from three kinds of
// webhook: repository (cli-replay.test.ts), organization and GitHub App. `hookgate replay`
// reads each one's deliveries API: 150 deliveries in the window over 2 pages, 140 already in
// the inbox, two redeliveries of missing events → 10 new; the App's API takes only a JWT
// signed with its private key, which the fake verifies.
const APP_ID = 424242;
const { privateKey, publicKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
const APP_KEY_PEM = privateKey.export({ type: 'pkcs1', format: 'pem' }).toString();

let db: TestDatabase;
let org: FakeGithub;
let app: FakeGithub;
let claimer: Claimer;
let configFile: string;

const now = Math.floor(Date.now() / 1000);

function deliveriesFor(guids: readonly string[]): GithubDelivery[] {
  return [
    ...guids.map((guid, i) => ({
      id: 2000 + i,
      guid,
      deliveredAt: new Date((now - 60 - i * 30) * 1000),
      event: 'issues',
      action: 'opened',
      payload: { action: 'opened', issue: { number: i, node: guid } },
    })),
    // Redeliveries (same GUID, new delivery id) of two missing events: one event each.
    ...[0, 1].map((i) => ({
      id: 9000 + i,
      guid: guids[i]!,
      deliveredAt: new Date((now - 30) * 1000),
      event: 'issues',
      action: 'opened',
      payload: { action: 'opened', issue: { number: i, node: guids[i] } },
      redelivery: true,
    })),
    // Before the window: paging stops there, and they are never fetched one by one.
    ...[0, 1].map((i) => ({
      id: 100 + i,
      guid: randomUUID(),
      deliveredAt: new Date((now - 5 * 3600) * 1000),
      event: 'issues',
      action: 'closed',
      payload: { action: 'closed', issue: { number: 900 + i } },
    })),
  ];
}

const orgGuids = Array.from({ length: 150 }, () => randomUUID());
const appGuids = Array.from({ length: 150 }, () => randomUUID());

beforeAll(async () => {
  db = await createTestDatabase();
  org = await startFakeGithubHookDeliveries({ organization: 'acme', hookId: 7 }, deliveriesFor(orgGuids));
  app = await startFakeGithubHookDeliveries({ app: { appId: APP_ID, publicKey } }, deliveriesFor(appGuids));
  const document = {
    endpoints: {
      ghorg: {
        provider: 'github',
        secrets: ['github-org-secret'],
        replay: { apiBase: org.url, organization: 'acme', hookId: 7 },
      },
      ghapp: {
        provider: 'github',
        secrets: ['github-app-secret'],
        replay: { apiBase: app.url, appId: APP_ID },
      },
    },
  };
  configFile = writeConfigFile(document);
  claimer = await Claimer.start(db.url, parseConfig(document, {}));
  // Before the outage: all but the 10 newest of each were received.
  await claimer.claim(
    'ghorg',
    orgGuids.slice(10).map((guid) => ({ eventId: guid })),
  );
  await claimer.claim(
    'ghapp',
    appGuids.slice(10).map((guid) => ({ eventId: guid })),
  );
}, 120_000);

afterAll(async () => {
  await claimer?.stop();
  await org?.close();
  await app?.close();
  await db?.drop();
});

async function inbox(endpoint: string) {
  const result = await db.pool.query<{ total: number; replayed: number }>(
    `SELECT count(*)::int AS total, count(*) FILTER (WHERE received_via = 'api_replay')::int AS replayed
       FROM hookgate.inbox WHERE endpoint = $1`,
    [endpoint],
  );
  return result.rows[0]!;
}

const jsonOf = (output: string) => JSON.parse(output.slice(output.indexOf('{')));
const replay = (endpoint: string, env: Record<string, string>, ...flags: string[]) =>
  runHookgate(
    ['replay', '--endpoint', endpoint, '--since', '3h', '--json', ...flags, '--config', configFile],
    {
      env: { DATABASE_URL: db.url, LOG_LEVEL: 'warn', ...env },
    },
  );

describe('hookgate replay: organization and GitHub App webhooks', () => {
  it('organization webhook: 152 fetched over 2 pages, 10 new, 142 present; a second run finds all present', async () => {
    const env = { GITHUB_TOKEN: 'ghp_test_org_replay' };
    const dry = await replay('ghorg', env, '--dry-run');
    expect(dry.code, dry.output).toBe(0);
    expect(jsonOf(dry.output)).toMatchObject({ dry_run: true, fetched: 152, new: 10, already_present: 142 });
    expect((await inbox('ghorg')).total).toBe(140);

    org.requests.length = 0;
    const run = await replay('ghorg', env);
    expect(run.code, run.output).toBe(0);
    expect(run.output).toContain('hook 7 of the organization acme');
    expect(jsonOf(run.output)).toMatchObject({ fetched: 152, new: 10, already_present: 142, unusable: 0 });
    const lists = org.requests.filter((r) => r.path === '/orgs/acme/hooks/7/deliveries');
    expect(lists.map((r) => r.status)).toEqual([200, 200]);
    expect(lists[1]!.query.get('cursor')).toBe(String(2000 + 98));
    expect(org.requests.some((r) => /\/deliveries\/10[01]$/.test(r.path))).toBe(false);
    expect(org.requests.every((r) => r.authorization === 'token ghp_test_org_replay')).toBe(true);
    expect(await inbox('ghorg')).toMatchObject({ total: 150, replayed: 10 });

    const again = await replay('ghorg', env);
    expect(jsonOf(again.output)).toMatchObject({ fetched: 152, new: 0, already_present: 152 });
    expect((await inbox('ghorg')).total).toBe(150);
  }, 120_000);

  it('GitHub App webhook: authenticated as the App with a JWT from its private key; the same report and dedupe', async () => {
    const env = { GITHUB_APP_PRIVATE_KEY: APP_KEY_PEM };
    app.requests.length = 0;
    const run = await replay('ghapp', env);
    expect(run.code, run.output).toBe(0);
    expect(run.output).toContain(`the webhook of GitHub App ${APP_ID}`);
    expect(jsonOf(run.output)).toMatchObject({ fetched: 152, new: 10, already_present: 142, unusable: 0 });
    const lists = app.requests.filter((r) => r.path === '/app/hook/deliveries');
    expect(lists.map((r) => r.status)).toEqual([200, 200]);
    expect(app.requests.every((r) => r.status === 200)).toBe(true);
    // Every request carried a JWT the App's public key verifies, issued by the App.
    expect(app.jwtClaims.length).toBe(app.requests.length);
    expect(app.jwtClaims.every((claims) => claims.iss === APP_ID)).toBe(true);
    expect(await inbox('ghapp')).toMatchObject({ total: 150, replayed: 10 });

    // A key written on one line with \n escapes (as some secret stores keep it) works too.
    const again = await replay('ghapp', { GITHUB_APP_PRIVATE_KEY: APP_KEY_PEM.replaceAll('\n', '\\n') });
    expect(again.code, again.output).toBe(0);
    expect(jsonOf(again.output)).toMatchObject({ fetched: 152, new: 0, already_present: 152 });
  }, 120_000);

  it('refuses without the right credential, before any request', async () => {
    app.requests.length = 0;
    const missing = await replay('ghapp', { GITHUB_APP_PRIVATE_KEY: '' });
    expect(missing.code).toBe(2);
    expect(missing.output).toMatch(
      /credentials_missing: Set GITHUB_APP_PRIVATE_KEY to the private key \(PEM\) of GitHub App 424242/,
    );
    const wrong = await replay('ghapp', { GITHUB_APP_PRIVATE_KEY: 'ghp_not_a_key' });
    expect(wrong.code).toBe(2);
    expect(wrong.output).toMatch(
      /credentials_invalid: GITHUB_APP_PRIVATE_KEY is not a private key in PEM form/,
    );
    // Another key than the App's: GitHub (here its fake) refuses the JWT, and replay says so.
    const other = generateKeyPairSync('rsa', { modulusLength: 2048 }).privateKey.export({
      type: 'pkcs1',
      format: 'pem',
    });
    const refused = await replay('ghapp', { GITHUB_APP_PRIVATE_KEY: other.toString() });
    expect(refused.code).toBe(1);
    expect(refused.output).toMatch(
      /replay_fetch_failed: GitHub list webhook deliveries at .* failed: A JSON web token could not be decoded/,
    );
    expect(app.requests.map((r) => r.status)).toEqual([401]);
    const noToken = await replay('ghorg', { GITHUB_TOKEN: '' });
    expect(noToken.code).toBe(2);
    expect(noToken.output).toMatch(
      /credentials_missing: Set GITHUB_TOKEN to a token that can read the organization's webhook deliveries/,
    );
  }, 120_000);
});
