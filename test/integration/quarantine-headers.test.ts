import { createHash } from 'node:crypto';
import type { PgBoss } from 'pg-boss';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type RunningConsole, startConsole } from '../../services/console/server.ts';
import { parseConfig } from '../../services/core/config/load.ts';
import type { Config } from '../../services/core/config/schema.ts';
import { releaseQuarantined } from '../../services/core/quarantine/actions.ts';
import { createBoss } from '../../services/core/queue/boss.ts';
import { silentLogger } from '../support/apply.ts';
import { runCliInProcess } from '../support/cli.ts';
import { createTestDatabase, type TestDatabase } from '../support/database.ts';
import { post } from '../support/deliveries.ts';
import { startTestGateway, type TestGateway } from '../support/gateway.ts';
import {
  bodySignature,
  FUZZ_HMAC,
  FUZZ_SECRETS,
  FUZZ_URL,
  type FuzzProvider,
  signatureHeaders,
} from '../support/sign.ts';

// A quarantined delivery keeps the headers its provider names for identifying and reading it,
// never its signature or its shared token: not in the row, not in `hookgate quarantine show`
// (text or --json), not on the console's page. Every provider whose secret travels in a header
// (GitLab, Okta, Postmark's basic auth, a `scheme` with algorithm token) and the HMAC providers'
// signature headers, each through the real gateway into a real PostgreSQL.

const OKTA_TOKEN = 'okta-shared-token-for-the-quarantine-test';
const POSTMARK_SECRET = 'pm-user:pm-password-for-the-quarantine-test';
const RELAY_WORD = 'relay-word-shared-token-for-the-quarantine-test';
/** Sent with every delivery: the request's own credentials, kept by no provider. */
const COOKIE = 'session=cookie-value-for-the-quarantine-test';
const CONSOLE_TOKEN = 'quarantine-headers-console-token-0123456789';
/** PostgreSQL cannot store it: every delivery below verifies, identifies and is quarantined. */
const UNSTORABLE = '\u0000';

const SIGNED: readonly FuzzProvider[] = [
  'standard-webhooks',
  'svix',
  'stripe',
  'github',
  'shopify',
  'slack',
  'paddle',
  'hmac',
  'gitlab',
  'twilio',
  'pagerduty',
  'zendesk',
  'twitch',
  'hubspot',
  'discord',
  'sendgrid',
  'mailgun',
];

function endpointsDocument(): Record<string, unknown> {
  const endpoints: Record<string, unknown> = Object.fromEntries(
    SIGNED.map((provider) => [
      provider,
      {
        provider,
        secrets: [FUZZ_SECRETS[provider]],
        ...(provider === 'hmac' ? { hmac: FUZZ_HMAC } : {}),
        ...(provider === 'twilio' || provider === 'hubspot' ? { url: FUZZ_URL } : {}),
      },
    ]),
  );
  endpoints.okta = { provider: 'okta', secrets: [OKTA_TOKEN] };
  endpoints.postmark = { provider: 'postmark', secrets: [POSTMARK_SECRET] };
  endpoints.relay = {
    provider: 'scheme',
    secrets: [RELAY_WORD],
    scheme: {
      algorithm: 'token',
      header: 'X-Relay-Word',
      encoding: 'text',
      id: { header: 'X-Delivery' },
      type: { pointer: '/kind' },
    },
  };
  // A GitLab delivery whose type this endpoint cannot read: held until an extract pointer says where.
  endpoints.gitlab_typeless = { provider: 'gitlab', secrets: [FUZZ_SECRETS.gitlab] };
  return endpoints;
}

function configWith(extra: Record<string, unknown> = {}): Config {
  return parseConfig(
    {
      claim: { maxWait: '2ms' },
      endpoints: { ...endpointsDocument(), ...extra },
      console: {
        port: 0,
        sessionSecret: 'quarantine-headers-session-secret-0123456789',
        tokens: [{ name: 'ci', sha256: createHash('sha256').update(CONSOLE_TOKEN).digest('hex') }],
      },
    },
    {},
  );
}

interface Sent {
  readonly endpoint: string;
  readonly body: string;
  readonly headers: Record<string, string>;
  /** Headers whose values must never be stored or shown. */
  readonly secretHeaders: readonly string[];
}

/** A body each provider identifies, with a string PostgreSQL cannot store. */
function deliveryFor(provider: FuzzProvider, n: number): Sent {
  const timestamp = Math.floor(Date.now() / 1000);
  const id = `q${n}-${provider}`;
  const bad = { bad: UNSTORABLE };
  let body: string;
  let extra: Record<string, string> = {};
  switch (provider) {
    case 'standard-webhooks':
    case 'svix':
    case 'zendesk':
      body = JSON.stringify({ type: 'thing.updated', ...bad });
      if (provider === 'zendesk') extra = { 'x-zendesk-webhook-invocation-id': id };
      break;
    case 'stripe':
      body = JSON.stringify({ id, type: 'invoice.paid', ...bad });
      break;
    case 'github':
      body = JSON.stringify({ action: 'opened', ...bad });
      extra = { 'x-github-delivery': id, 'x-github-event': 'issues' };
      break;
    case 'shopify':
      body = JSON.stringify({ id: n, ...bad });
      extra = { 'x-shopify-event-id': id, 'x-shopify-topic': 'orders/updated' };
      break;
    case 'slack':
      body = JSON.stringify({ event_id: id, type: 'event_callback', event: { type: 'message' }, ...bad });
      break;
    case 'paddle':
      body = JSON.stringify({ event_id: id, event_type: 'subscription.updated', ...bad });
      break;
    case 'hmac':
      body = JSON.stringify(bad);
      extra = { 'x-event-id': id, 'x-event-type': 'thing.done' };
      break;
    case 'gitlab':
      body = JSON.stringify({ object_kind: 'push', ...bad });
      extra = { 'idempotency-key': id };
      break;
    case 'twilio':
      body = 'MessageStatus=sent&Body=%00';
      extra = { 'i-twilio-idempotency-token': id, 'content-type': 'application/x-www-form-urlencoded' };
      break;
    case 'pagerduty':
      body = JSON.stringify({ event: { id, event_type: 'incident.triggered' }, ...bad });
      break;
    case 'twitch':
      body = JSON.stringify({ subscription: { type: 'channel.follow' }, event: {}, ...bad });
      break;
    case 'hubspot':
    case 'sendgrid':
      body = JSON.stringify([bad]);
      break;
    case 'discord':
      body = JSON.stringify({ type: 1, event: { type: 'APPLICATION_AUTHORIZED' }, ...bad });
      break;
    case 'mailgun':
      body = JSON.stringify({
        'event-data': { id, event: 'delivered' },
        ...bad,
        ...bodySignature(provider, { secret: FUZZ_SECRETS.mailgun, timestamp, id }),
      });
      break;
  }
  const signature = signatureHeaders(provider, {
    body: Buffer.from(body),
    secret: FUZZ_SECRETS[provider],
    timestamp,
    id,
  });
  return {
    endpoint: provider,
    body,
    headers: { 'content-type': 'application/json', ...extra, ...signature, cookie: COOKIE },
    // The signature headers a provider sends, and the timestamp-free ones of the token schemes.
    secretHeaders: Object.keys(signature).filter((name) => !/-id$|timestamp/.test(name)),
  };
}

function tokenDeliveries(): Sent[] {
  return [
    {
      endpoint: 'okta',
      body: JSON.stringify({ eventId: 'okta-q1', eventType: 'user.lifecycle.create', bad: UNSTORABLE }),
      headers: { 'content-type': 'application/json', authorization: OKTA_TOKEN, cookie: COOKIE },
      secretHeaders: ['authorization'],
    },
    {
      endpoint: 'postmark',
      body: JSON.stringify({ RecordType: 'Bounce', bad: UNSTORABLE }),
      headers: {
        'content-type': 'application/json',
        authorization: `Basic ${Buffer.from(POSTMARK_SECRET).toString('base64')}`,
        cookie: COOKIE,
      },
      secretHeaders: ['authorization'],
    },
    {
      endpoint: 'relay',
      body: JSON.stringify({ kind: 'thing.done', bad: UNSTORABLE }),
      headers: {
        'content-type': 'application/json',
        'x-relay-word': RELAY_WORD,
        'x-delivery': 'relay-q1',
        cookie: COOKIE,
      },
      secretHeaders: ['x-relay-word'],
    },
  ];
}

let db: TestDatabase;
let gateway: TestGateway;
let consoleServer: RunningConsole;
let boss: PgBoss;
const sent: Sent[] = [];
/** Every value that must never be kept or shown: secrets, tokens, signatures, the cookie. */
const forbidden = new Set<string>();

beforeAll(async () => {
  db = await createTestDatabase();
  const config = configWith();
  gateway = await startTestGateway(db.url, config);
  boss = createBoss({
    connectionString: db.url,
    max: 2,
    supervise: false,
    applicationName: 'quarantine-headers',
  });
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
  for (const secret of [...Object.values(FUZZ_SECRETS), OKTA_TOKEN, POSTMARK_SECRET, RELAY_WORD, COOKIE])
    forbidden.add(secret);
});

afterAll(async () => {
  await consoleServer?.stop();
  await gateway?.stop();
  await boss?.stop({ graceful: false, close: true });
  await db?.drop();
});

async function quarantinedRows(): Promise<
  Array<{ id: string; endpoint: string; headers: Record<string, string> }>
> {
  return (
    await db.pool.query('SELECT id::text AS id, endpoint, headers FROM hookgate.quarantine ORDER BY id')
  ).rows;
}

function expectNothingSecret(text: string, where: string): void {
  for (const value of forbidden) {
    // Public keys (Discord's, SendGrid's) are configured as secrets but are public: not checked.
    if (value === FUZZ_SECRETS.discord || value === FUZZ_SECRETS.sendgrid) continue;
    expect(text.includes(value), `${where} shows a secret`).toBe(false);
    // A basic-auth header carries its secret in base64.
    expect(text.includes(Buffer.from(value).toString('base64')), `${where} shows a secret (base64)`).toBe(
      false,
    );
  }
}

describe('quarantined deliveries keep no secret header', () => {
  it('quarantines a delivery of every provider, keeping its identity headers and no signature or token', async () => {
    const deliveries = [...SIGNED.map((provider, n) => deliveryFor(provider, n)), ...tokenDeliveries()];
    for (const delivery of deliveries) {
      const reply = await post(`${gateway.url}/webhooks/${delivery.endpoint}`, delivery);
      expect([delivery.endpoint, reply.status, reply.json.status]).toEqual([
        delivery.endpoint,
        200,
        'quarantined',
      ]);
      sent.push(delivery);
      for (const name of delivery.secretHeaders) forbidden.add(delivery.headers[name]!);
    }
    const rows = await quarantinedRows();
    expect(rows.map((row) => row.endpoint).sort()).toEqual(deliveries.map((d) => d.endpoint).sort());
    for (const row of rows) {
      const delivery = sent.find((d) => d.endpoint === row.endpoint)!;
      for (const name of [...delivery.secretHeaders, 'cookie', 'authorization'])
        expect(Object.keys(row.headers), `${row.endpoint} keeps ${name}`).not.toContain(name);
      expect(Object.keys(row.headers), row.endpoint).not.toContain('content-type');
    }
    expectNothingSecret(JSON.stringify(rows), 'the quarantine table');
    // What a release needs to identify them again is there.
    const byEndpoint = Object.fromEntries(rows.map((row) => [row.endpoint, row.headers]));
    expect(byEndpoint.gitlab).toEqual({ 'idempotency-key': 'q8-gitlab' });
    expect(byEndpoint.github).toEqual({ 'x-github-delivery': 'q3-github', 'x-github-event': 'issues' });
    expect(byEndpoint.relay).toEqual({ 'x-delivery': 'relay-q1' });
    expect(byEndpoint.twitch?.['twitch-eventsub-message-id']).toBe('q12-twitch');
    expect(byEndpoint['standard-webhooks']?.['webhook-id']).toBe('q0-standard-webhooks');
  });

  it('`hookgate quarantine show` (text and --json) shows none of them', async () => {
    const ids = (await quarantinedRows()).map((row) => row.id);
    const env = { DATABASE_URL: db.url };
    const text = await runCliInProcess(['quarantine', 'show', ...ids], env);
    expect(text.code).toBe(0);
    expect(text.stdout).toContain('idempotency-key: q8-gitlab');
    expectNothingSecret(text.output, 'quarantine show');
    const json = await runCliInProcess(['quarantine', 'show', ...ids, '--json'], env);
    expect(json.code).toBe(0);
    expect((JSON.parse(json.stdout) as unknown[]).length).toBe(ids.length);
    expectNothingSecret(json.output, 'quarantine show --json');
  });

  it("the console's quarantine pages show none of them", async () => {
    const auth = { authorization: `Bearer ${CONSOLE_TOKEN}` };
    for (const row of await quarantinedRows()) {
      const page = await fetch(new URL(`/quarantine/${row.id}`, consoleServer.url), { headers: auth });
      expect(page.status).toBe(200);
      expectNothingSecret(await page.text(), `the console's page of ${row.endpoint}`);
    }
    const list = await fetch(new URL('/quarantine', consoleServer.url), { headers: auth });
    expectNothingSecret(await list.text(), "the console's quarantine list");
  });

  it('a held GitLab delivery still releases from the headers kept once its type can be read', async () => {
    const timestamp = Math.floor(Date.now() / 1000);
    const body = JSON.stringify({ event_name: 'repository_update' });
    const headers = {
      'content-type': 'application/json',
      'idempotency-key': 'gitlab-typeless-1',
      ...signatureHeaders('gitlab', {
        body: Buffer.from(body),
        secret: FUZZ_SECRETS.gitlab,
        timestamp,
        id: '',
      }),
    };
    const reply = await post(`${gateway.url}/webhooks/gitlab_typeless`, { body, headers });
    expect([reply.status, reply.json]).toEqual([
      200,
      { status: 'quarantined', reason: 'event_type_missing' },
    ]);
    const row = (await quarantinedRows()).find((r) => r.endpoint === 'gitlab_typeless')!;
    expect(row.headers).toEqual({ 'idempotency-key': 'gitlab-typeless-1' });
    const fixed = configWith({
      gitlab_typeless: {
        provider: 'gitlab',
        secrets: [FUZZ_SECRETS.gitlab],
        extract: { eventType: '/event_name' },
      },
    });
    const outcomes = await releaseQuarantined(db.pool, fixed, { ids: [row.id], actor: 'test' });
    expect(outcomes).toMatchObject([{ id: row.id, outcome: 'accepted', eventId: 'gitlab-typeless-1' }]);
    const inbox = await db.pool.query(
      "SELECT event_type, headers FROM hookgate.inbox WHERE endpoint = 'gitlab_typeless'",
    );
    expect(inbox.rows).toEqual([{ event_type: 'repository_update', headers: {} }]);
  });
});
