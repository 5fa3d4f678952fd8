import { createHash, randomBytes } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { hashPassword } from '../../services/console/security/passwords.ts';
import { consoleActions } from '../../services/console/server.ts';
import { freePort } from '../../services/core/db/embedded.ts';
import { launchBrowser, type TestBrowser } from '../support/browser.ts';
import { shot, watchPages } from '../support/console-browser.ts';
import { createTestDatabase, type TestDatabase } from '../support/database.ts';
import { post, standardWebhook } from '../support/deliveries.ts';
import { type RunningProcess, startHookgate } from '../support/process.ts';
import { waitFor, workerConfigDocument, writeConfigFile } from '../support/worker-harness.ts';

// Roles in the console, against real processes (gateway and worker in one, the console in another,
// as the chart runs them) and a real PostgreSQL: a viewer (bob, `:viewer` in the users file) sees
// every page in Chromium with no action offered, and every action the console has is refused for
// a viewer's session and a viewer's token over HTTP (403, nothing changed), while an operator
// (alice, no role given: operator, as every user was before roles) is offered them. The API's
// viewer tokens are refused every action in test/integration/api-contract.test.ts; here once more
// against the console process.

const SECRET = 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw';
const ALICE = 'alice-has-a-long-password';
const BOB = 'bob-has-a-long-password-too';
const SESSION_SECRET = 'console-roles-test-session-secret-0123456789';
const VIEWER_TOKEN = randomBytes(24).toString('base64url');
const sha = (text: string) => createHash('sha256').update(text).digest('hex');

const { cspMessages, pageErrors, watch } = watchPages();
let db: TestDatabase;
let hookgate: RunningProcess;
let consoleProcess: RunningProcess;
let gatewayUrl: string;
let consoleUrl: string;
let browser: TestBrowser;
let quarantinedId: string;
let deliveryId: string;

async function statusOf(eventId: string): Promise<string | undefined> {
  const { rows } = await db.pool.query<{ status: string }>(
    `SELECT status FROM hookgate.inbox WHERE event_id = $1`,
    [eventId],
  );
  return rows[0]?.status;
}

beforeAll(async () => {
  db = await createTestDatabase();
  const users = join(writeConfigFile({}), '..', 'console-users');
  writeFileSync(users, `alice:${await hashPassword(ALICE)}\nbob:${await hashPassword(BOB)}:viewer\n`);
  const closed = await freePort();
  const document = workerConfigDocument(
    {
      // Always fails: dead at once (retryLimit 0).
      ops: { handler: `sql:SELECT CASE WHEN $1::jsonb IS NOT NULL THEN 'x' END` },
      // Applied; its one destination refuses connections: the delivery is dead after one attempt.
      shop: {
        handler: 'record',
        destinations: { ledger: { url: `http://127.0.0.1:${closed}/ledger`, retry: { limit: 0 } } },
      },
    },
    { retryLimit: 0 },
  );
  const configFile = writeConfigFile({
    ...document,
    console: { tokens: [{ name: 'dash', sha256: sha(VIEWER_TOKEN), role: 'viewer' }] },
  });
  const port = await freePort();
  gatewayUrl = `http://127.0.0.1:${port}`;
  hookgate = startHookgate(['serve', '--role', 'all', '--config', configFile], {
    env: { DATABASE_URL: db.url, PORT: String(port), METRICS_PORT: String(await freePort()) },
  });
  const consolePort = await freePort();
  consoleProcess = startHookgate(['serve', '--role', 'console', '--config', configFile], {
    env: {
      DATABASE_URL: db.url,
      METRICS_PORT: String(await freePort()),
      CONSOLE_PORT: String(consolePort),
      CONSOLE_SESSION_SECRET: SESSION_SECRET,
      CONSOLE_USERS_FILE: users,
    },
  });
  await hookgate.waitFor(/hookgate is serving/, 120_000);
  await consoleProcess.waitFor(/console at http/, 120_000);
  consoleUrl = `http://127.0.0.1:${consolePort}`;
  const deliver = async (endpoint: string, eventId: string, body: string) => {
    const reply = await post(
      `${gatewayUrl}/webhooks/${endpoint}`,
      standardWebhook(SECRET, { eventId, body }),
    );
    expect(reply.status, JSON.stringify(reply.json)).toBe(200);
  };
  await deliver('ops', 'evt_ops_dead', '{"type":"job.run","data":{}}');
  await deliver('shop', 'evt_shop_1', '{"type":"order.paid","data":{"id":"o1"}}');
  // No type: held in quarantine.
  await deliver('shop', 'evt_untyped', '{"data":{"id":"o2"}}');
  await waitFor('evt_ops_dead dead', async () => (await statusOf('evt_ops_dead')) === 'dead', 60_000);
  await waitFor(
    'the ledger delivery dead',
    async () =>
      (await db.pool.query(`SELECT 1 FROM hookgate.destination_deliveries WHERE status = 'dead'`)).rows
        .length > 0,
    60_000,
  );
  deliveryId = (
    await db.pool.query<{ id: string }>(`SELECT id::text AS id FROM hookgate.destination_deliveries`)
  ).rows[0]!.id;
  quarantinedId = (await db.pool.query<{ id: string }>(`SELECT id::text AS id FROM hookgate.quarantine`))
    .rows[0]!.id;
  browser = await launchBrowser();
}, 240_000);

afterAll(async () => {
  await browser?.close();
  for (const process of [consoleProcess, hookgate]) {
    if (process && process.child.exitCode === null) {
      process.child.kill('SIGTERM');
      await process.exited();
    }
  }
  await db?.drop();
});

/** A page signed in as this user (the browser's cookies cleared first: one user at a time). */
async function signedIn(user: string, password: string): Promise<Page> {
  await browser.context.clearCookies();
  const page = watch(await browser.context.newPage());
  await page.goto(`${consoleUrl}/login`);
  await page.fill('input[name=user]', user);
  await page.fill('input[name=password]', password);
  await Promise.all([page.waitForNavigation(), page.click('button[type=submit]')]);
  expect(new URL(page.url()).pathname).toBe('/');
  return page;
}

/** The pages where an operator is offered actions. */
const PAGES = () => [
  '/',
  '/events?endpoint=ops&status=dead',
  '/events/ops/evt_ops_dead',
  '/events/shop/evt_shop_1',
  '/destinations',
  `/quarantine/${quarantinedId}`,
];

/** What an operator's form would send to each action (the fields it names). */
const TARGETS = (): Record<string, Record<string, string>> => ({
  requeue: { endpoint: 'ops', event_id: 'evt_ops_dead' },
  discard: { endpoint: 'ops', event_id: 'evt_ops_dead', reason: 'viewer tries' },
  pause: { endpoint: 'shop' },
  resume: { endpoint: 'shop' },
  'quarantine-release': { id: quarantinedId },
  'quarantine-drop': { id: quarantinedId, reason: 'viewer tries' },
  'destination-pause': { endpoint: 'shop', destination: 'ledger' },
  'destination-resume': { endpoint: 'shop', destination: 'ledger' },
  redeliver: { endpoint: 'shop', destination: 'ledger', delivery_id: deliveryId },
});

async function unchanged(): Promise<void> {
  expect(await statusOf('evt_ops_dead')).toBe('dead');
  const state = await db.pool.query<{ paused: number; held: number; dead: number; acted: number }>(
    `SELECT (SELECT count(*)::int FROM hookgate.endpoint_state WHERE paused_at IS NOT NULL) AS paused,
            (SELECT count(*)::int FROM hookgate.quarantine WHERE released_at IS NULL AND dropped_at IS NULL) AS held,
            (SELECT count(*)::int FROM hookgate.destination_deliveries WHERE status = 'dead') AS dead,
            (SELECT count(*)::int FROM hookgate.audit) AS acted`,
  );
  expect(state.rows[0]).toEqual({ paused: 0, held: 1, dead: 1, acted: 0 });
}

describe('the console’s roles in Chromium and over HTTP', () => {
  it('shows a viewer every page with no action offered, marked as a viewer', async () => {
    const page = await signedIn('bob', BOB);
    expect(await page.locator('header .role').textContent()).toBe('viewer');
    for (const path of PAGES()) {
      const response = await page.goto(`${consoleUrl}${path}`);
      expect([path, response?.status()]).toEqual([path, 200]);
      expect([path, await page.locator('form[action^="/actions/"]').count()]).toEqual([path, 0]);
    }
    await page.goto(`${consoleUrl}/events/ops/evt_ops_dead`);
    expect(await page.locator('body').textContent()).toContain('evt_ops_dead');
    await shot(page, 'viewer-event');
    expect(cspMessages).toEqual([]);
    expect(pageErrors).toEqual([]);
    await page.close();
  });

  it('offers an operator the actions on the same pages', async () => {
    const page = await signedIn('alice', ALICE);
    expect(await page.locator('header .role').count()).toBe(0);
    const offered: Record<string, number> = {};
    for (const path of PAGES()) {
      await page.goto(`${consoleUrl}${path}`);
      offered[path] = await page.locator('form[action^="/actions/"]').count();
    }
    expect(Object.values(offered).every((count) => count > 0)).toBe(true);
    await page.close();
  });

  it('refuses every action to a viewer’s session, with its own CSRF token, from its own page', async () => {
    const page = await signedIn('bob', BOB);
    // A token of bob's session (the sign-out form carries it): valid CSRF, the role is what refuses.
    const csrf = await page.locator('form[action="/logout"] input[name=_csrf]').getAttribute('value');
    expect(csrf).toBeTruthy();
    const ids = consoleActions().ids();
    expect(ids.sort()).toEqual(Object.keys(TARGETS()).sort());
    for (const id of ids) {
      for (const path of [`/actions/${id}/preview`, `/actions/${id}`]) {
        const response = await page.request.post(`${consoleUrl}${path}`, {
          form: { _csrf: csrf!, ...TARGETS()[id]! },
          headers: { origin: consoleUrl },
        });
        expect([path, response.status()]).toEqual([path, 403]);
        expect(await response.text()).toContain('bob is a viewer');
      }
    }
    await unchanged();
    await page.close();
  });

  it('refuses every action to a viewer’s token, on the console’s forms and the API alike', async () => {
    const bearer = { authorization: `Bearer ${VIEWER_TOKEN}` };
    for (const id of consoleActions().ids()) {
      const response = await fetch(`${consoleUrl}/actions/${id}`, {
        method: 'POST',
        headers: { ...bearer, 'content-type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams(TARGETS()[id]).toString(),
      });
      expect([id, response.status]).toEqual([id, 403]);
    }
    const api = [
      '/api/v1/endpoints/ops/pause',
      '/api/v1/events/ops/evt_ops_dead/requeue',
      `/api/v1/deliveries/${deliveryId}/redeliver`,
      `/api/v1/quarantine/${quarantinedId}/drop`,
    ];
    for (const path of api) {
      const response = await fetch(`${consoleUrl}${path}`, {
        method: 'POST',
        headers: { ...bearer, 'idempotency-key': randomBytes(8).toString('hex') },
      });
      expect([path, response.status, ((await response.json()) as { type: string }).type]).toEqual([
        path,
        403,
        'role_forbidden',
      ]);
    }
    // The same token reads.
    const events = await fetch(`${consoleUrl}/api/v1/events?status=dead`, { headers: bearer });
    expect(events.status).toBe(200);
    expect(((await events.json()) as { items: { event_id: string }[] }).items.map((e) => e.event_id)).toEqual(
      ['evt_ops_dead'],
    );
    expect((await fetch(`${consoleUrl}/events/ops/evt_ops_dead`, { headers: bearer })).status).toBe(200);
    await unchanged();
  });
});
