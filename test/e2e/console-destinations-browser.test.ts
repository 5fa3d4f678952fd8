import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { hashPassword } from '../../services/console/security/passwords.ts';
import { freePort } from '../../services/core/db/embedded.ts';
import { launchBrowser, type TestBrowser } from '../support/browser.ts';
import { shot, watchPages } from '../support/console-browser.ts';
import { createTestDatabase, type TestDatabase } from '../support/database.ts';
import { post, standardWebhook } from '../support/deliveries.ts';
import { type FakeDownstream, startFakeDownstream } from '../support/fake-downstream.ts';
import { type RunningProcess, startHookgate } from '../support/process.ts';
import { waitFor, workerConfigDocument, writeConfigFile } from '../support/worker-harness.ts';

// The console's destinations page, its redeliver and pause/resume actions, and the event page's
// attempts, destinations and audit sections, in Chromium against real processes: a gateway,
// worker and relay (`--role all`), a console, and a receiver on 127.0.0.1 that refuses the first
// delivery for good (410, with an attacker-written body) so it is dead, then accepts. Screenshots
// go to .screenshots/console/ (git-ignored); CONSOLE_DOCS_SCREENSHOTS=1 refreshes docs/images/.

const SECRET = 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw';
const PASSWORD = 'correct horse battery staple';
const SESSION_SECRET = 'console-destinations-test-session-secret-0123456789';
const HOSTILE_ANSWER = '<script>window.__hookgatePwned = 1; alert(1)</script><img src=x onerror=alert(2)>';

const { dialogs, cspMessages, watch } = watchPages();
let db: TestDatabase;
let receiver: FakeDownstream;
let hookgate: RunningProcess;
let consoleProcess: RunningProcess;
let gatewayUrl: string;
let consoleUrl: string;
let browser: TestBrowser;

interface Delivery {
  readonly id: string;
  readonly status: string;
  readonly attempts: number;
  readonly webhook_id: string;
}

async function deliveryOf(eventId: string): Promise<Delivery | undefined> {
  const { rows } = await db.pool.query<Delivery>(
    `SELECT id::text AS id, status, attempts, webhook_id FROM hookgate.destination_deliveries WHERE event_id = $1`,
    [eventId],
  );
  return rows[0];
}

async function send(eventId: string): Promise<void> {
  const reply = await post(
    `${gatewayUrl}/webhooks/pay`,
    standardWebhook(SECRET, {
      eventId,
      body: JSON.stringify({ type: 'invoice.paid', data: { id: eventId } }),
    }),
  );
  expect(reply.status, JSON.stringify(reply.json)).toBe(200);
}

async function signedIn(path: string): Promise<Page> {
  const page = watch(await browser.context.newPage());
  await page.goto(`${consoleUrl}${path}`);
  if (new URL(page.url()).pathname === '/login') {
    await page.fill('input[name=user]', 'alice');
    await page.fill('input[name=password]', PASSWORD);
    await Promise.all([page.waitForNavigation(), page.click('button[type=submit]')]);
  }
  expect(new URL(page.url()).pathname).toBe(path.split('?')[0]);
  return page;
}

beforeAll(async () => {
  db = await createTestDatabase();
  receiver = await startFakeDownstream();
  const config = writeConfigFile({
    ...workerConfigDocument({
      pay: {
        handler: 'record',
        destinations: {
          ledger: { url: `${receiver.url}/ledger`, timeout: '2s', retry: { limit: 1, backoff: '1s' } },
        },
      },
    }),
    relay: { pollingInterval: '100ms' },
    console: { sessionTtl: '1h' },
  });
  const users = join(config, '..', 'console-users');
  writeFileSync(users, `alice:${await hashPassword(PASSWORD)}\n`);
  const port = await freePort();
  gatewayUrl = `http://127.0.0.1:${port}`;
  hookgate = startHookgate(['serve', '--role', 'all', '--config', config], {
    env: { DATABASE_URL: db.url, PORT: String(port), METRICS_PORT: String(await freePort()) },
  });
  const consolePort = await freePort();
  consoleProcess = startHookgate(['serve', '--role', 'console', '--config', config], {
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
  browser = await launchBrowser();
}, 240_000);

afterAll(async () => {
  await browser?.close();
  for (const running of [consoleProcess, hookgate]) {
    if (running && running.child.exitCode === null) {
      running.child.kill('SIGTERM');
      await running.exited();
    }
  }
  await receiver?.close();
  await db?.drop();
});

describe('the console destinations page and redelivery in Chromium', () => {
  it('shows a dead delivery, redelivers it from the event page after a dry run (same webhook-id), and audits it', async () => {
    // A 410 is final: dead at its first attempt, whatever the retry budget.
    receiver.script('/ledger', [{ status: 410, body: HOSTILE_ANSWER }]);
    await send('evt_dead');
    const dead = await waitFor('the delivery to be dead', async () => {
      const delivery = await deliveryOf('evt_dead');
      return delivery?.status === 'dead' ? delivery : null;
    });

    const page = await signedIn('/destinations');
    const row = page.locator('tr[aria-label="pay/ledger"]');
    const cells = await row.locator('td').allTextContents();
    expect(cells.slice(0, 4).map((cell) => cell.trim())).toEqual(['pay', 'ledger', 'active', 'closed']);
    expect(cells[6]?.trim()).toBe('1');
    await shot(page, 'destinations', true);

    await page.goto(`${consoleUrl}/events/pay/evt_dead`);
    const destination = page.locator('tr[aria-label="destination ledger"]');
    expect(await destination.textContent()).toContain('dead');
    expect(await destination.textContent()).toContain('410');
    // The receiver's answer is attacker-written: shown as text, never markup.
    expect(await page.locator('main').textContent()).toContain('<script>window.__hookgatePwned');
    expect(await page.locator('main script, main img').count()).toBe(0);
    expect(await page.evaluate('window.__hookgatePwned')).toBeUndefined();
    const attempts = await page.locator('h2:text("Apply attempts") + table tbody tr').count();
    expect(attempts).toBe(1);

    await Promise.all([page.waitForNavigation(), destination.locator('button:text("Redeliver…")').click()]);
    expect(await page.locator('.confirm').textContent()).toContain(
      'Dry run: Would send 1 delivery of pay/ledger again (delivery',
    );
    expect((await deliveryOf('evt_dead'))?.status).toBe('dead');
    await Promise.all([page.waitForNavigation(), page.click('.confirm button.danger')]);
    expect((await page.locator('.notice').textContent())?.trim()).toBe(
      'Redelivering 1 delivery of pay/ledger.',
    );
    const delivered = await waitFor('the redelivery', async () => {
      const delivery = await deliveryOf('evt_dead');
      return delivery?.status === 'delivered' ? delivery : null;
    });
    expect(delivered.id).toBe(dead.id);
    const sent = receiver.requests.filter((request) => request.path === '/ledger');
    expect(sent).toHaveLength(2);
    expect(sent.map((request) => request.headers['webhook-id'])).toEqual([dead.webhook_id, dead.webhook_id]);

    await page.goto(`${consoleUrl}/events/pay/evt_dead`);
    const audit = (await page.locator('h2:text("Operator actions") + table').textContent()) ?? '';
    expect(audit).toContain('console:alice');
    expect(audit).toContain('redeliver');
    expect(audit).toContain('run');
    await shot(page, 'event-destinations');
    expect(dialogs).toEqual([]);
    expect(cspMessages).toEqual([]);
    await page.close();
  });

  it('pauses a destination (its deliveries held, no attempt made) and resumes it (delivered once)', async () => {
    const page = await signedIn('/destinations');
    const row = page.locator('tr[aria-label="pay/ledger"]');
    await Promise.all([page.waitForNavigation(), row.locator('button:text("Pause…")').click()]);
    expect(await page.locator('.confirm').textContent()).toContain('Would pause pay/ledger');
    await Promise.all([page.waitForNavigation(), page.click('.confirm button.danger')]);
    expect((await page.locator('.notice').textContent())?.trim()).toMatch(
      /^Paused pay\/ledger: \d+ deliveries held/,
    );

    const before = receiver.requests.length;
    await send('evt_held');
    const held = await waitFor('the new delivery to be held', async () => {
      const delivery = await deliveryOf('evt_held');
      return delivery?.status === 'held' ? delivery : null;
    });
    expect(held.attempts).toBe(0);
    await page.goto(`${consoleUrl}/destinations`);
    const paused = await page.locator('tr[aria-label="pay/ledger"] td').allTextContents();
    expect(paused[2]).toMatch(/paused\s+since .* by console:alice/);
    expect(paused[5]?.trim()).toBe('1');
    expect(receiver.requests.length).toBe(before);

    await Promise.all([
      page.waitForNavigation(),
      page.locator('tr[aria-label="pay/ledger"] button:text("Resume…")').click(),
    ]);
    expect(await page.locator('.confirm').textContent()).toContain('its 1 held deliveries are due again');
    await Promise.all([page.waitForNavigation(), page.click('.confirm button.danger')]);
    await waitFor(
      'the held delivery sent',
      async () => (await deliveryOf('evt_held'))?.status === 'delivered',
    );
    expect(receiver.requests.filter((request) => request.body.includes('evt_held'))).toHaveLength(1);
    const { rows } = await db.pool.query<{ command: string; actor: string }>(
      `SELECT command, actor FROM hookgate.audit WHERE command LIKE 'destination %' ORDER BY id`,
    );
    expect(rows).toEqual([
      { command: 'destination pause', actor: 'console:alice' },
      { command: 'destination resume', actor: 'console:alice' },
    ]);
    await page.close();
  });

  it('refuses a redelivery without its CSRF token', async () => {
    const page = await signedIn('/destinations');
    const refused = await browser.context.request.post(`${consoleUrl}/actions/redeliver`, {
      form: { endpoint: 'pay', destination: 'ledger' },
      maxRedirects: 0,
    });
    expect(refused.status()).toBe(403);
    await page.close();
  });
});
