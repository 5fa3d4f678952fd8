import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { hashPassword } from '../../services/console/security/passwords.ts';
import { recordActions } from '../../services/core/audit/audit.ts';
import { freePort } from '../../services/core/db/embedded.ts';
import { launchBrowser, type TestBrowser } from '../support/browser.ts';
import { shot, watchPages } from '../support/console-browser.ts';
import { createTestDatabase, type TestDatabase } from '../support/database.ts';
import { post, standardWebhook } from '../support/deliveries.ts';
import { type RunningProcess, startHookgate } from '../support/process.ts';
import { waitFor, workerConfigDocument, writeConfigFile } from '../support/worker-harness.ts';

// The console's quarantine and audit pages in Chromium against real processes: a gateway and
// worker whose config finds no type in the deliveries (so they are quarantined), and a console
// whose config has since learnt where the type is (`extract.eventType: /kind`), so its release
// claims them through the normal path and the worker applies them. Screenshots go to
// .screenshots/console/ (git-ignored); CONSOLE_DOCS_SCREENSHOTS=1 refreshes docs/images/.

const SECRET = 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw';
const PASSWORD = 'correct horse battery staple';
const SESSION_SECRET = 'console-quarantine-test-session-secret-0123456789';

// No `type` (the gateway's config reads it from there): quarantined as event_type_missing.
// ESC cannot appear raw in JSON, so it comes escaped; the C1 CSI and the override come raw.
const HOSTILE = {
  kind: 'issue.opened',
  data: {
    description: '<script>window.__hookgatePwned = "script"; alert(1)</script>',
    image: '<img src=x onerror="window.__hookgatePwned = \'img\'; alert(2)">',
    link: 'javascript:window.__hookgatePwned="link";alert(3)',
    anchor: '<a href="javascript:alert(4)">click me</a>',
    terminal: '\u001b[31mRED\u001b[0m \u009b2J \u202eevil',
    closing: '</pre></td><svg onload=alert(5)>',
  },
};

const { dialogs, cspMessages, pageErrors, watch } = watchPages();
let db: TestDatabase;
let hookgate: RunningProcess;
let consoleProcess: RunningProcess;
let gatewayUrl: string;
let consoleUrl: string;
let browser: TestBrowser;
let orderId: string;
let hostileId: string;

async function deliverQuarantined(eventId: string, payload: unknown): Promise<string> {
  const reply = await post(
    `${gatewayUrl}/webhooks/shop`,
    standardWebhook(SECRET, { eventId, body: JSON.stringify(payload) }),
  );
  expect(reply.status, JSON.stringify(reply.json)).toBe(200);
  expect(reply.json).toMatchObject({ status: 'quarantined', reason: 'event_type_missing' });
  const { rows } = await db.pool.query<{ id: string }>(
    `SELECT id::text AS id FROM hookgate.quarantine WHERE headers->>'webhook-id' = $1`,
    [eventId],
  );
  expect(rows).toHaveLength(1);
  return rows[0]!.id;
}

async function statusOf(eventId: string): Promise<string | undefined> {
  const { rows } = await db.pool.query<{ status: string }>(
    `SELECT status FROM hookgate.inbox WHERE event_id = $1`,
    [eventId],
  );
  return rows[0]?.status;
}

async function signedIn(): Promise<Page> {
  const page = watch(await browser.context.newPage());
  await page.goto(`${consoleUrl}/quarantine`);
  if (new URL(page.url()).pathname === '/login') {
    await page.fill('input[name=user]', 'alice');
    await page.fill('input[name=password]', PASSWORD);
    await Promise.all([page.waitForNavigation(), page.click('button[type=submit]')]);
  }
  expect(new URL(page.url()).pathname).toBe('/quarantine');
  return page;
}

beforeAll(async () => {
  db = await createTestDatabase();
  const gatewayConfig = writeConfigFile(workerConfigDocument({ shop: { handler: 'record' } }));
  const consoleConfig = writeConfigFile({
    ...workerConfigDocument({ shop: { handler: 'record', extract: { eventType: '/kind' } } }),
    console: { sessionTtl: '1h', pageSize: 10 },
  });
  const users = join(consoleConfig, '..', 'console-users');
  writeFileSync(users, `alice:${await hashPassword(PASSWORD)}\n`);
  const port = await freePort();
  gatewayUrl = `http://127.0.0.1:${port}`;
  hookgate = startHookgate(['serve', '--role', 'all', '--config', gatewayConfig], {
    env: { DATABASE_URL: db.url, PORT: String(port), METRICS_PORT: String(await freePort()) },
  });
  const consolePort = await freePort();
  consoleProcess = startHookgate(['serve', '--role', 'console', '--config', consoleConfig], {
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
  orderId = await deliverQuarantined('evt_q_order', { kind: 'order.created', data: { id: 'ord_1' } });
  for (let n = 1; n <= 10; n += 1)
    await deliverQuarantined(`evt_q_filler_${n}`, { kind: 'filler', data: { n } });
  hostileId = await deliverQuarantined('evt_q_hostile', HOSTILE);
  expect(await statusOf('evt_q_order')).toBeUndefined();
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
  for (const secret of [PASSWORD, SESSION_SECRET]) {
    expect(consoleProcess?.output() ?? '').not.toContain(secret);
  }
  await db?.drop();
});

describe('the console quarantine and audit pages in Chromium', () => {
  it('lists held deliveries newest first in keyset pages, filtered by endpoint and reason, and counts them on the overview', async () => {
    const page = await signedIn();
    // console.pageSize is 10 here and 12 are held: the newest 10, then Older → to the other two.
    const ids = () => page.locator('table.quarantine td.id a').allTextContents();
    const first = await ids();
    expect(first).toHaveLength(10);
    expect(first[0]).toBe(hostileId);
    await Promise.all([page.waitForNavigation(), page.click('a[rel=next]')]);
    expect(new URL(page.url()).searchParams.get('before')).toMatch(/^\d{4}-.*Z_\d+$/);
    const second = await ids();
    expect(second).toHaveLength(2);
    expect(second.at(-1)).toBe(orderId);
    expect(new Set([...first, ...second]).size).toBe(12);
    expect(await page.locator('.pager').textContent()).toContain('End of the results');
    await page.goto(`${consoleUrl}/quarantine?endpoint=shop&reason=event_type_missing`);
    expect((await ids())[0]).toBe(hostileId);
    expect(await page.locator('table.quarantine').textContent()).toContain('event_type_missing');
    await page.goto(`${consoleUrl}/quarantine?reason=version_invalid`);
    expect(await ids()).toEqual([]);
    expect(await page.locator('main').textContent()).toContain('Nothing is held that matches');
    await page.goto(`${consoleUrl}/quarantine?endpoint=shop`);
    await shot(page, 'quarantine', true);
    await page.goto(consoleUrl);
    const card = (await page.locator('section.card[aria-label=shop]').textContent()) ?? '';
    expect(card).toMatch(/Quarantined\s*12/);
    await page.close();
  });

  it('shows a hostile quarantined body as inert text: no dialog, no script, no element, no CSP report', async () => {
    const page = await signedIn();
    const before = { dialogs: dialogs.length, csp: cspMessages.length, errors: pageErrors.length };
    await page.goto(`${consoleUrl}/quarantine/${hostileId}`);
    expect((await page.locator('.facts .reason').textContent())?.trim()).toBe('event_type_missing');
    expect(await page.locator('.facts .why').textContent()).toBeTruthy();
    expect(await page.locator('table.kv').textContent()).toContain('evt_q_hostile');
    const body = (await page.locator('pre.raw').textContent()) ?? '';
    // The raw bytes as sent (JSON.stringify's escapes included), not pretty-printed.
    expect(body).toContain('<script>window.__hookgatePwned = \\"script\\"; alert(1)</script>');
    expect(body).toContain('<img src=x onerror=\\"window.__hookgatePwned');
    expect(body).toContain('javascript:window.__hookgatePwned');
    expect(body).toContain('</pre></td><svg onload=alert(5)>');
    expect(body).toContain('\\u001b[31mRED');
    expect(await page.locator('pre.raw .ctl').allTextContents()).toEqual(['\\x9b', '\\u202e']);
    expect(await page.locator('script, img, iframe, object, embed').count()).toBe(0);
    expect(await page.locator('svg[onload], [onerror], [onload]').count()).toBe(0);
    expect(await page.locator('a[href^="javascript:" i]').count()).toBe(0);
    expect(await page.evaluate('window.__hookgatePwned')).toBeUndefined();
    await shot(page, 'quarantine-hostile');
    expect(dialogs.length).toBe(before.dialogs);
    expect(pageErrors.length).toBe(before.errors);
    expect(cspMessages.slice(before.csp)).toEqual([]);
    expect(consoleProcess.output()).not.toMatch(/content security policy violation/);
    await page.close();
  });

  it('refuses a release without its CSRF token', async () => {
    const page = await signedIn();
    const missing = await browser.context.request.post(`${consoleUrl}/actions/quarantine-release`, {
      form: { id: orderId },
      maxRedirects: 0,
    });
    expect(missing.status()).toBe(403);
    const { rows } = await db.pool.query(`SELECT released_at FROM hookgate.quarantine WHERE id = $1`, [
      orderId,
    ]);
    expect(rows[0]).toEqual({ released_at: null });
    await page.close();
  });

  it('releases a delivery after a dry run and a confirmation: claimed into the inbox with the new config and applied', async () => {
    const page = await signedIn();
    await page.goto(`${consoleUrl}/quarantine/${orderId}`);
    await Promise.all([page.waitForNavigation(), page.click('button:text("Release…")')]);
    expect(await page.locator('.confirm').textContent()).toContain(
      `Dry run: Would release 1 delivery ${orderId} of shop (held as event_type_missing) through the normal claim`,
    );
    expect(await statusOf('evt_q_order')).toBeUndefined();
    await Promise.all([page.waitForNavigation(), page.click('.confirm button.danger')]);
    expect((await page.locator('.notice').textContent())?.trim()).toBe(
      `Released delivery ${orderId}: event evt_q_order claimed into the inbox (accepted).`,
    );
    await waitFor(
      'the released event applied',
      async () => (await statusOf('evt_q_order')) === 'processed',
      60_000,
    );
    const { rows } = await db.pool.query(
      `SELECT event_type FROM hookgate.inbox WHERE event_id = 'evt_q_order'`,
    );
    expect(rows[0]).toEqual({ event_type: 'order.created' });
    await page.goto(`${consoleUrl}/quarantine/${orderId}`);
    expect(await page.locator('.notice').textContent()).toContain('Released');
    expect(await page.locator('button:text("Release…")').count()).toBe(0);
    await page.close();
  });

  it('drops a delivery with a required reason, and the audit page shows it under the console user', async () => {
    const page = await signedIn();
    await page.goto(`${consoleUrl}/quarantine/${hostileId}`);
    // Without a reason the form's own field refuses; the server refuses it too.
    const token = await page
      .locator('form[action="/actions/quarantine-drop/preview"] input[name=_csrf]')
      .getAttribute('value');
    const reasonless = await browser.context.request.post(`${consoleUrl}/actions/quarantine-drop`, {
      form: { id: hostileId, _csrf: token! },
    });
    expect(reasonless.status()).toBe(400);
    await page.fill(
      'form[action="/actions/quarantine-drop/preview"] input[name=reason]',
      'hostile test body',
    );
    await Promise.all([page.waitForNavigation(), page.click('button:text("Drop…")')]);
    expect(await page.locator('.confirm').textContent()).toContain(
      `Would drop 1 delivery ${hostileId} of shop (held as event_type_missing) for good`,
    );
    await Promise.all([page.waitForNavigation(), page.click('.confirm button.danger')]);
    expect((await page.locator('.notice').textContent())?.trim()).toBe(`Dropped delivery ${hostileId}.`);
    const { rows } = await db.pool.query(
      `SELECT settled_by, settle_reason, dropped_at IS NOT NULL AS dropped FROM hookgate.quarantine WHERE id = $1`,
      [hostileId],
    );
    expect(rows[0]).toEqual({
      settled_by: 'console:alice',
      settle_reason: 'hostile test body',
      dropped: true,
    });

    await page.goto(`${consoleUrl}/audit?actor=console:alice&command=quarantine+drop`);
    const cells = (selector: string) => page.locator(`table.audit ${selector}`).allTextContents();
    // Newest first: the drop, then its dry run.
    expect(await cells('td.command')).toEqual(['quarantine drop', 'quarantine drop']);
    expect(await cells('td.actor')).toEqual(['console:alice', 'console:alice']);
    expect(await cells('td.reason')).toEqual(['hostile test body', 'hostile test body']);
    expect(await cells('td.kind')).toEqual(['run', 'dry run']);
    await page.goto(`${consoleUrl}/audit?actor=nobody`);
    expect(await page.locator('main').textContent()).toContain('No operator action matches');
    await page.goto(`${consoleUrl}/audit?since=1h&endpoint=shop`);
    expect(await cells('td.command')).toHaveLength(4);
    await shot(page, 'audit', true);
    // Keyset pages: 12 actions recorded in one statement share one `at`; the id breaks the tie.
    await recordActions(
      db.pool,
      Array.from({ length: 12 }, (_, n) => ({
        actor: 'cli:paging',
        command: 'requeue',
        filters: { n },
        count: n,
        dryRun: true,
      })),
    );
    await page.goto(`${consoleUrl}/audit?actor=cli:paging`);
    const counts = () => page.locator('table.audit tbody tr td:nth-child(5)').allTextContents();
    const firstPage = await counts();
    expect(firstPage).toHaveLength(10);
    await Promise.all([page.waitForNavigation(), page.click('a[rel=next]')]);
    const secondPage = await counts();
    expect(secondPage).toHaveLength(2);
    // Every action once across the pages: none skipped or repeated at the page boundary.
    expect([...firstPage, ...secondPage].map(Number).sort((x, y) => x - y)).toEqual(
      Array.from({ length: 12 }, (_, n) => n),
    );
    // The same rows `hookgate audit` reads.
    const audit = await db.pool.query(
      `SELECT command, actor, dry_run FROM hookgate.audit WHERE command LIKE 'quarantine %' ORDER BY id`,
    );
    expect(audit.rows).toEqual([
      { command: 'quarantine release', actor: 'console:alice', dry_run: true },
      { command: 'quarantine release', actor: 'console:alice', dry_run: false },
      { command: 'quarantine drop', actor: 'console:alice', dry_run: true },
      { command: 'quarantine drop', actor: 'console:alice', dry_run: false },
    ]);
    await page.goto(`${consoleUrl}/audit?since=yesterday-ish`);
    expect(await page.locator('.error').textContent()).toContain('Since must be');
    await page.close();
  });
});
