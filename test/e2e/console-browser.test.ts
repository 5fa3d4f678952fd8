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
import { type RunningProcess, startHookgate } from '../support/process.ts';
import { waitFor, workerConfigDocument, writeConfigFile } from '../support/worker-harness.ts';

// The console in a real browser (Debian's Chromium, headless, through playwright-core) against
// real hookgate processes (gateway and worker in one, the console in another, as the chart runs
// them) and a real PostgreSQL, with signed deliveries. Every page is screenshotted into
// .screenshots/console/ (git-ignored) on every run; CONSOLE_DOCS_SCREENSHOTS=1 also refreshes
// the ones docs/console.md shows.

const SECRET = 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw';
const PASSWORD = 'correct horse battery staple';
const BOB_PASSWORD = 'bob-has-a-long-password';
const SESSION_SECRET = 'console-browser-test-session-secret-0123456789';

// What an attacker puts in a payload: markup, event handlers, script URLs, terminal escapes
// (ESC and the C1 CSI), and a right-to-left override that would reorder what the page shows.
const HOSTILE = {
  description: '<script>window.__hookgatePwned = "script"; alert(1)</script>',
  image: '<img src=x onerror="window.__hookgatePwned = \'img\'; alert(2)">',
  link: 'javascript:window.__hookgatePwned="link";alert(3)',
  anchor: '<a href="javascript:alert(4)">click me</a>',
  terminal: '\u001b[31mRED\u001b[0m \u009b2J \u202eevil',
  closing: '</pre></td><svg onload=alert(5)>',
};

const { dialogs, cspMessages, pageErrors, watch } = watchPages();
let db: TestDatabase;
let hookgate: RunningProcess;
let consoleProcess: RunningProcess;
let gatewayUrl: string;
let consoleUrl: string;
let browser: TestBrowser;

async function deliver(endpoint: string, eventId: string, payload: unknown): Promise<void> {
  const delivery = standardWebhook(SECRET, { eventId, body: JSON.stringify(payload) });
  const reply = await post(`${gatewayUrl}/webhooks/${endpoint}`, delivery);
  expect(reply.status, JSON.stringify(reply.json)).toBe(200);
}

async function statusOf(eventId: string): Promise<string | undefined> {
  const { rows } = await db.pool.query<{ status: string }>(
    `SELECT status FROM hookgate.inbox WHERE event_id = $1`,
    [eventId],
  );
  return rows[0]?.status;
}

beforeAll(async () => {
  db = await createTestDatabase();
  await db.pool.query('CREATE TABLE public.console_fixed (fixed boolean)');
  const users = join(writeConfigFile({}), '..', 'console-users');
  writeFileSync(
    users,
    `# console users\nalice:${await hashPassword(PASSWORD)}\nbob:${await hashPassword(BOB_PASSWORD)}\n`,
  );
  const document = workerConfigDocument(
    {
      // Both with the console's payload index, so a payload search over every endpoint reads it.
      shop: { handler: 'record', payloadSearch: true },
      // Fails (and with retryLimit 0 is dead at once) until public.console_fixed has a row.
      ops: {
        handler: `sql:SELECT CASE WHEN $1::jsonb #>> '{payload,data,fail}' = 'yes' AND NOT EXISTS (SELECT 1 FROM public.console_fixed) THEN 'x' END`,
        payloadSearch: true,
      },
    },
    { retryLimit: 0 },
  );
  const configFile = writeConfigFile({ ...document, console: { sessionTtl: '1h' } });
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
  const announced = await consoleProcess.waitFor(/console at http/, 120_000);
  consoleUrl = `http://127.0.0.1:${consolePort}`;
  expect(JSON.parse(announced)).toMatchObject({ url: `${consoleUrl}/`, sign_in: true });

  for (let n = 1; n <= 12; n += 1) {
    await deliver('shop', `evt_shop_${n}`, {
      type: 'invoice.paid',
      data: {
        object: {
          id: `in_${n}`,
          customer: n % 4 === 0 ? 'cus_console_1' : `cus_other_${n}`,
          amount_due: n * 100,
        },
      },
    });
  }
  await deliver('shop', 'evt_shop_1', { type: 'invoice.paid', data: { object: { id: 'in_1' } } });
  await deliver('shop', 'evt_hostile', { type: 'issue.opened', data: HOSTILE });
  // Dead too, and older: the one the console discards.
  await deliver('ops', 'evt_ops_poison', { type: 'job.run', data: { fail: 'yes' } });
  await waitFor(
    'evt_ops_poison to be dead',
    async () => (await statusOf('evt_ops_poison')) === 'dead',
    60_000,
  );
  await deliver('ops', 'evt_ops_dead', { type: 'job.run', data: { fail: 'yes' } });
  await waitFor('evt_ops_dead to be dead', async () => (await statusOf('evt_ops_dead')) === 'dead', 60_000);
  await waitFor(
    'the shop events processed',
    async () => (await statusOf('evt_hostile')) === 'processed',
    60_000,
  );
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
  // Neither process ever printed a console password or the session secret.
  for (const secret of [PASSWORD, BOB_PASSWORD, SESSION_SECRET]) {
    expect(consoleProcess?.output() ?? '').not.toContain(secret);
    expect(hookgate?.output() ?? '').not.toContain(secret);
  }
  await db?.drop();
});

async function signIn(page: Page, user: string, password: string): Promise<number> {
  await page.fill('input[name=user]', user);
  await page.fill('input[name=password]', password);
  const [response] = await Promise.all([page.waitForNavigation(), page.click('button[type=submit]')]);
  return response?.status() ?? 0;
}

describe('the console in Chromium', () => {
  it('redirects an unauthenticated request to the sign-in page, and refuses unauthenticated actions', async () => {
    const page = watch(await browser.context.newPage());
    await page.goto(`${consoleUrl}/events?status=dead`);
    expect(new URL(page.url()).pathname).toBe('/login');
    expect(new URL(page.url()).searchParams.get('next')).toBe('/events?status=dead');
    await shot(page, 'login');
    const plain = await fetch(`${consoleUrl}/events/shop/evt_shop_1`, { redirect: 'manual' });
    expect(plain.status).toBe(303);
    expect(plain.headers.get('location')).toBe('/login?next=%2Fevents%2Fshop%2Fevt_shop_1');
    const action = await fetch(`${consoleUrl}/actions/requeue`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: 'endpoint=ops&event_id=evt_ops_dead',
    });
    expect(action.status).toBe(401);
    expect(await statusOf('evt_ops_dead')).toBe('dead');
    await page.close();
  });

  it('signs in with a Secure, HttpOnly, SameSite=Strict session cookie and lands where it was going', async () => {
    const page = watch(await browser.context.newPage());
    await page.goto(`${consoleUrl}/events?status=dead`);
    expect(await signIn(page, 'alice', PASSWORD)).toBe(200);
    expect(new URL(page.url()).pathname).toBe('/events');
    expect((await page.locator('table.events td.id a').first().textContent())?.trim()).toBe('evt_ops_dead');
    const cookies = await browser.context.cookies(consoleUrl);
    const session = cookies.find((cookie) => cookie.name === '__Host-hookgate_session');
    expect(session).toMatchObject({ httpOnly: true, secure: true, sameSite: 'Strict', path: '/' });
    // An endpoint that reconciles shows how far it is known to be gap-free (docs/reconcile.md).
    await db.pool.query(
      `INSERT INTO hookgate.reconcile_state (endpoint, covered_since, watermark, last_outcome)
       VALUES ('shop', '2026-11-30T00:00:00Z', '2026-12-01T08:15:00Z', 'complete')`,
    );
    await page.goto(consoleUrl);
    expect(await page.locator('section.card[aria-label=shop] .value').first().isVisible()).toBe(true);
    const shopCard = await page.locator('section.card[aria-label=shop]').textContent();
    expect(shopCard).toContain('Gap-free until');
    expect(shopCard).toContain('2026-12-01');
    expect(await page.locator('section.card[aria-label=ops]').textContent()).not.toContain('Gap-free until');
    expect(await page.locator('section.card svg.chart rect').count()).toBeGreaterThan(0);
    await shot(page, 'overview', true);
    await page.close();
  });

  it('finds an event by its id and by what its payload contains', async () => {
    const page = watch(await browser.context.newPage());
    await page.goto(`${consoleUrl}/events`);
    await page.fill('input[name=event_id]', 'evt_shop_7');
    await Promise.all([page.waitForNavigation(), page.click('form.filters button[type=submit]')]);
    const ids = () => page.locator('table.events td.id a').allTextContents();
    expect(await ids()).toEqual(['evt_shop_7']);
    expect(await page.locator('p.muted').first().textContent()).toContain('by event id');

    await page.goto(`${consoleUrl}/events`);
    await page.fill('input[name=contains]', '{"data":{"object":{"customer":"cus_console_1"}}}');
    await Promise.all([page.waitForNavigation(), page.click('form.filters button[type=submit]')]);
    expect((await ids()).sort()).toEqual(['evt_shop_12', 'evt_shop_4', 'evt_shop_8']);
    expect(await page.locator('p.muted').first().textContent()).toContain('payload containment');
    await shot(page, 'events', true);

    await Promise.all([page.waitForNavigation(), page.click('table.events td.id a >> text=evt_shop_8')]);
    expect(new URL(page.url()).pathname).toBe('/events/shop/evt_shop_8');
    expect(await page.locator('pre.block').textContent()).toContain('"customer": "cus_console_1"');
    expect(await page.locator('ol.timeline').textContent()).toContain('settled processed after 1 attempt(s)');
    await page.close();
  });

  it('renders a hostile verified payload as inert text: no dialog, no script, no CSP violation', async () => {
    const page = watch(await browser.context.newPage());
    const before = { dialogs: dialogs.length, csp: cspMessages.length, errors: pageErrors.length };
    await page.goto(`${consoleUrl}/events/shop/evt_hostile`);
    const payload = (await page.locator('pre.block').textContent()) ?? '';
    expect(payload).toContain('<script>window.__hookgatePwned = \\"script\\"; alert(1)</script>');
    expect(payload).toContain('<img src=x onerror=\\"window.__hookgatePwned');
    expect(payload).toContain('javascript:window.__hookgatePwned');
    expect(payload).toContain('</pre></td><svg onload=alert(5)>');
    // ESC is escaped by JSON; the C1 CSI and the override are shown as escapes, marked.
    expect(payload).toContain('\\u001b[31mRED');
    expect(payload).toContain('\\x9b2J');
    expect(payload).toContain('\\u202eevil');
    expect(await page.locator('pre.block .ctl').allTextContents()).toEqual(['\\x9b', '\\u202e']);
    expect(await page.locator('script, img, iframe, object, embed').count()).toBe(0);
    expect(await page.locator('svg[onload], [onerror], [onload]').count()).toBe(0);
    expect(await page.locator('a[href^="javascript:" i]').count()).toBe(0);
    expect(
      // A string, so it runs in the page (this file's types have no DOM).
      await page.evaluate('window.__hookgatePwned'),
    ).toBeUndefined();
    // The events list shows the same event without acting on it either.
    await page.goto(`${consoleUrl}/events?endpoint=shop&type=issue.opened`);
    expect((await page.locator('table.events td.id a').textContent())?.trim()).toBe('evt_hostile');
    await shot(page, 'hostile');
    await page.goto(`${consoleUrl}/events/shop/evt_hostile`);
    await shot(page, 'hostile-event');
    expect(dialogs.length).toBe(before.dialogs);
    expect(pageErrors.length).toBe(before.errors);
    expect(cspMessages.slice(before.csp)).toEqual([]);
    expect(consoleProcess.output()).not.toMatch(/content security policy violation/);
    await page.close();
  });

  it('refuses a state-changing request without its CSRF token (and takes it with one)', async () => {
    const page = watch(await browser.context.newPage());
    await page.goto(`${consoleUrl}/events/ops/evt_ops_dead`);
    const token = await page
      .locator('form[action="/actions/requeue/preview"] input[name=_csrf]')
      .getAttribute('value');
    expect(token).toBeTruthy();
    // The browser's own cookies (signed in), no token, a wrong one, then the right one.
    const request = browser.context.request;
    const form = { endpoint: 'ops', event_id: 'evt_ops_dead' };
    const missing = await request.post(`${consoleUrl}/actions/requeue`, { form, maxRedirects: 0 });
    expect(missing.status()).toBe(403);
    expect(await missing.text()).toMatch(/no valid CSRF token/);
    const wrong = await request.post(`${consoleUrl}/actions/requeue`, {
      form: { ...form, _csrf: `${token!.slice(0, -2)}AA` },
      maxRedirects: 0,
    });
    expect(wrong.status()).toBe(403);
    const crossSite = await request.post(`${consoleUrl}/actions/requeue/preview`, {
      form: { ...form, _csrf: token! },
      headers: { origin: 'https://evil.example' },
      maxRedirects: 0,
    });
    expect(crossSite.status()).toBe(403);
    expect(await statusOf('evt_ops_dead')).toBe('dead');
    const preview = await request.post(`${consoleUrl}/actions/requeue/preview`, {
      form: { ...form, _csrf: token! },
    });
    expect(preview.status()).toBe(200);
    expect(await preview.text()).toContain('Would put 1 event evt_ops_dead of ops back to pending');
    expect(await statusOf('evt_ops_dead')).toBe('dead');
    await page.close();
  });

  it('discards a dead event with a reason after a dry run and a confirmation, audited as the console user', async () => {
    const page = watch(await browser.context.newPage());
    await page.goto(`${consoleUrl}/events/ops/evt_ops_poison`);
    expect((await page.locator('.facts .status').textContent())?.trim()).toBe('dead');
    await page.fill('form[action="/actions/discard/preview"] input[name=reason]', 'poison: never applicable');
    await Promise.all([page.waitForNavigation(), page.click('button:text("Discard…")')]);
    expect(await page.locator('.confirm').textContent()).toContain(
      'Dry run: Would discard 1 event evt_ops_poison of ops for good (kept as discarded, never applied), because: poison: never applicable.',
    );
    await shot(page, 'discard-confirm');
    expect(await statusOf('evt_ops_poison')).toBe('dead');
    await Promise.all([page.waitForNavigation(), page.click('.confirm button.danger')]);
    expect((await page.locator('.notice').textContent())?.trim()).toBe('Discarded 1 event(s) of ops.');
    expect(await statusOf('evt_ops_poison')).toBe('discarded');
    const row = await db.pool.query(
      `SELECT discarded_by, discard_reason FROM hookgate.inbox WHERE event_id = 'evt_ops_poison'`,
    );
    expect(row.rows[0]).toEqual({
      discarded_by: 'console:alice',
      discard_reason: 'poison: never applicable',
    });
    // The dry run and the discard, both audited under the console user.
    const audit = await db.pool.query(
      `SELECT actor, dry_run, count::int AS count, event_ids FROM hookgate.audit WHERE command = 'discard' ORDER BY id`,
    );
    expect(audit.rows).toEqual([
      { actor: 'console:alice', dry_run: true, count: 1, event_ids: ['evt_ops_poison'] },
      { actor: 'console:alice', dry_run: false, count: 1, event_ids: ['evt_ops_poison'] },
    ]);
    await page.goto(`${consoleUrl}/events/ops/evt_ops_poison`);
    expect((await page.locator('.facts .status').textContent())?.trim()).toBe('discarded');
    expect(await page.locator('button:text("Discard…")').count()).toBe(0);
    await page.close();
  });

  it('requeues a dead event after a dry run and a confirmation, and shows it processed', async () => {
    const page = watch(await browser.context.newPage());
    await page.goto(`${consoleUrl}/events/ops/evt_ops_dead`);
    expect((await page.locator('.facts .status').textContent())?.trim()).toBe('dead');
    expect(await page.locator('pre.error-text').isVisible()).toBe(true);
    await shot(page, 'event', true);
    await db.pool.query('INSERT INTO public.console_fixed VALUES (true)');
    await Promise.all([page.waitForNavigation(), page.click('button:text("Requeue…")')]);
    expect(await page.locator('.confirm').textContent()).toContain(
      'Dry run: Would put 1 event evt_ops_dead of ops back to pending',
    );
    await shot(page, 'requeue-confirm');
    expect(await statusOf('evt_ops_dead')).toBe('dead');
    await Promise.all([page.waitForNavigation(), page.click('.confirm button.danger')]);
    expect((await page.locator('.notice').textContent())?.trim()).toBe('Requeued 1 event(s) of ops.');
    await shot(page, 'requeue-done');
    await waitFor(
      'the console to show evt_ops_dead processed',
      async () => {
        await page.goto(`${consoleUrl}/events/ops/evt_ops_dead`);
        return (await page.locator('.facts .status').textContent()) === 'processed';
      },
      60_000,
      500,
    );
    expect(await page.locator('dl.facts').textContent()).toContain('(1 before the last requeue)');
    await shot(page, 'event-processed');
    expect(consoleProcess.output()).toMatch(
      /"console_user":"alice".*"action":"requeue".*"msg":"console action"/,
    );
    const requeued = await db.pool.query(
      `SELECT actor, event_ids FROM hookgate.audit WHERE command = 'requeue' AND NOT dry_run`,
    );
    expect(requeued.rows).toEqual([{ actor: 'console:alice', event_ids: ['evt_ops_dead'] }]);
    await page.close();
  });

  it('pauses and resumes an endpoint from the overview after a dry run and a confirmation, audited as the console user', async () => {
    const page = watch(await browser.context.newPage());
    const card = 'section.card[aria-label=shop]';
    const state = async () =>
      (
        await db.pool.query(
          `SELECT paused_at IS NOT NULL AS paused, paused_by, pause_reason FROM hookgate.endpoint_state WHERE endpoint = 'shop'`,
        )
      ).rows[0];
    await page.goto(consoleUrl);
    await page.fill(`${card} input[name=reason]`, 'downstream maintenance');
    await Promise.all([page.waitForNavigation(), page.click(`${card} button:text("Pause…")`)]);
    expect(await page.locator('.confirm').textContent()).toContain(
      'Dry run: Would pause shop: workers apply none of its events until it is resumed; the gateway keeps accepting them.',
    );
    expect(await state()).toBeUndefined();
    await Promise.all([page.waitForNavigation(), page.click('.confirm button.danger:text("Pause shop")')]);
    expect((await page.locator('.notice').textContent())?.trim()).toBe(
      'Paused shop: its events are held until it is resumed.',
    );
    expect(await state()).toEqual({
      paused: true,
      paused_by: 'console:alice',
      pause_reason: 'downstream maintenance',
    });
    await page.goto(consoleUrl);
    expect(await page.locator(`${card} .paused`).textContent()).toMatch(
      /Paused since .* by console:alice: downstream maintenance/,
    );
    await shot(page, 'overview-paused');
    await Promise.all([page.waitForNavigation(), page.click(`${card} button:text("Resume…")`)]);
    expect(await page.locator('.confirm').textContent()).toContain(
      'Dry run: Would resume shop (paused by console:alice): its held events are applied in their order.',
    );
    await Promise.all([page.waitForNavigation(), page.click('.confirm button.danger:text("Resume shop")')]);
    expect((await page.locator('.notice').textContent())?.trim()).toBe(
      'Resumed shop: its held events are applied in their order.',
    );
    expect(await state()).toMatchObject({ paused: false });
    const audit = await db.pool.query(
      `SELECT actor, command, count::int AS count FROM hookgate.audit WHERE endpoint = 'shop' ORDER BY id`,
    );
    expect(audit.rows).toEqual([
      { actor: 'console:alice', command: 'pause', count: 1 },
      { actor: 'console:alice', command: 'resume', count: 1 },
    ]);
    await page.close();
  });

  it('signs out: the session is gone and pages redirect again', async () => {
    const page = watch(await browser.context.newPage());
    await page.goto(consoleUrl);
    await Promise.all([page.waitForNavigation(), page.click('button:text("Sign out")')]);
    expect(new URL(page.url()).pathname).toBe('/login');
    await page.goto(`${consoleUrl}/events`);
    expect(new URL(page.url()).pathname).toBe('/login');
    await page.close();
  });
  it('slows sign-in after five wrong passwords: the right one is then refused until the wait is over', async () => {
    const page = watch(await browser.context.newPage());
    const statuses: number[] = [];
    for (let attempt = 1; attempt <= 5; attempt += 1) {
      await page.goto(`${consoleUrl}/login`);
      statuses.push(await signIn(page, 'bob', `wrong password ${attempt}`));
    }
    expect(statuses).toEqual([401, 401, 401, 401, 429]);
    expect(await page.locator('.error').textContent()).toMatch(
      /Too many failed sign-ins: try again in \d+ s/,
    );
    await page.goto(`${consoleUrl}/login`);
    expect(await signIn(page, 'bob', BOB_PASSWORD)).toBe(429);
    await shot(page, 'login-limited');
    expect(new URL(page.url()).pathname).toBe('/login');
    await page.close();
  });
});
