import { createHash } from 'node:crypto';
import type { PgBoss } from 'pg-boss';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type RunningConsole, startConsole } from '../../services/console/server.ts';
import { parseConfig } from '../../services/core/config/load.ts';
import { createBoss } from '../../services/core/queue/boss.ts';
import { silentLogger } from '../support/apply.ts';
import { createTestDatabase, type TestDatabase } from '../support/database.ts';
import { SW_SECRET } from '../support/gateway.ts';

// Sign-in by an authenticating proxy's header (believed only from the proxy's own address) and by
// bearer token, the headers every answer carries, and that no configured secret reaches a page.
const TOKEN = 'console-auth-test-token-0123456789abcdef';
const SESSION_SECRET = 'console-auth-test-session-secret-0123456789';
const HASH = 'scrypt$32768$8$1$c2FsdHNhbHRzYWx0c2FsdA$aGFzaGhhc2hoYXNoaGFzaGhhc2hoYXNoaGFzaGhhc2hoYQ';

let db: TestDatabase;
let boss: PgBoss;
const consoles: RunningConsole[] = [];

async function consoleTrusting(addresses: string[]): Promise<RunningConsole> {
  const config = parseConfig(
    {
      endpoints: { shop: { provider: 'standard-webhooks', secrets: [SW_SECRET] } },
      console: {
        port: 0,
        sessionSecret: SESSION_SECRET,
        users: [{ name: 'alice', passwordHash: HASH }],
        tokens: [{ name: 'ci', sha256: createHash('sha256').update(TOKEN).digest('hex') }],
        proxyAuth: { trustedAddresses: addresses, userHeader: 'X-Forwarded-Email' },
      },
    },
    {},
  );
  const running = await startConsole({
    config,
    databaseUrl: db.url,
    boss,
    logger: silentLogger,
    embedded: false,
    env: {},
  });
  consoles.push(running);
  return running;
}

beforeAll(async () => {
  db = await createTestDatabase();
  boss = createBoss({
    connectionString: db.url,
    max: 2,
    supervise: false,
    applicationName: 'console-auth-test',
  });
  boss.on('error', () => {});
  await boss.start();
});

afterAll(async () => {
  for (const running of consoles) await running.stop();
  await boss?.stop({ graceful: false, close: true });
  await db?.drop();
});

const get = (running: RunningConsole, path: string, headers: Record<string, string> = {}) =>
  fetch(new URL(path, running.url), { headers, redirect: 'manual' });

describe('console sign-in by proxy header and token', () => {
  it('believes the proxy header from the proxy address, binds its CSRF token to that user', async () => {
    const running = await consoleTrusting(['127.0.0.0/8']);
    const page = await get(running, '/', { 'x-forwarded-email': 'carol@example.com' });
    expect(page.status).toBe(200);
    const html = await page.text();
    expect(html).toContain('<span class="user">carol@example.com</span>');
    // No sign-out form: the proxy owns the session.
    expect(html).not.toContain('action="/logout"');
    const token = /name="_csrf" value="([^"]+)"/.exec(
      await (
        await get(running, '/events?endpoint=shop&status=dead', { 'x-forwarded-email': 'carol@example.com' })
      ).text(),
    )?.[1];
    expect(token).toBeTruthy();
    const post = (user: string, csrf?: string) =>
      fetch(new URL('/actions/requeue/preview', running.url), {
        method: 'POST',
        redirect: 'manual',
        headers: { 'x-forwarded-email': user, 'content-type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams({
          endpoint: 'shop',
          status: 'dead',
          ...(csrf ? { _csrf: csrf } : {}),
        }).toString(),
      });
    expect((await post('carol@example.com')).status).toBe(403);
    expect((await post('mallory@example.com', token)).status).toBe(403);
    expect((await post('carol@example.com', token)).status).toBe(200);
  });

  it('ignores the header from any other address: the request is not signed in', async () => {
    const running = await consoleTrusting(['10.0.0.0/8']);
    const page = await get(running, '/events', { 'x-forwarded-email': 'carol@example.com' });
    expect(page.status).toBe(303);
    expect(page.headers.get('location')).toBe('/login?next=%2Fevents');
  });

  it('signs in a bearer token, and only the right one', async () => {
    const running = await consoleTrusting(['10.0.0.0/8']);
    expect((await get(running, '/', { authorization: `Bearer ${TOKEN}` })).status).toBe(200);
    expect((await get(running, '/', { authorization: `Bearer ${TOKEN}x` })).status).toBe(303);
  });

  it('sends its security headers on every answer, signed in or not', async () => {
    const running = await consoleTrusting(['10.0.0.0/8']);
    for (const [path, headers] of [
      ['/login', {}],
      ['/', { authorization: `Bearer ${TOKEN}` }],
      ['/nowhere', { authorization: `Bearer ${TOKEN}` }],
      ['/events', {}],
    ] as const) {
      const answer = await get(running, path, headers);
      expect(answer.headers.get('content-security-policy'), path).toMatch(
        /^default-src 'none'; style-src 'self';/,
      );
      expect(answer.headers.get('x-frame-options')).toBe('DENY');
      expect(answer.headers.get('x-content-type-options')).toBe('nosniff');
      expect(answer.headers.get('cache-control')).toBe('no-store');
      expect(answer.headers.get('x-powered-by')).toBeNull();
    }
    const login = await get(running, '/login');
    expect(login.headers.get('set-cookie')).toMatch(
      /^__Host-hookgate_login=[A-Za-z0-9_-]{22}; Path=\/; HttpOnly; SameSite=Strict; Secure; Max-Age=1800$/,
    );
  });

  it('shows no configured secret on any page', async () => {
    const running = await consoleTrusting(['10.0.0.0/8']);
    const auth = { authorization: `Bearer ${TOKEN}` };
    for (const path of ['/', '/events', '/login', '/events?status=dead', '/events/shop/none']) {
      const text = await (await get(running, path, path === '/login' ? {} : auth)).text();
      for (const secret of [SW_SECRET, SW_SECRET.slice(6), SESSION_SECRET, HASH, TOKEN])
        expect(text, path).not.toContain(secret);
    }
  });
});
