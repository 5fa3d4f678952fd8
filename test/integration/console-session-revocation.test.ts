import { createHash } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { PgBoss } from 'pg-boss';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { hashPassword } from '../../services/console/security/passwords.ts';
import { type RunningConsole, startConsole } from '../../services/console/server.ts';
import { parseConfig } from '../../services/core/config/load.ts';
import { createBoss } from '../../services/core/queue/boss.ts';
import { silentLogger } from '../support/apply.ts';
import { createTestDatabase, type TestDatabase } from '../support/database.ts';
import { SW_SECRET } from '../support/gateway.ts';

// A console session ends when its user is removed or their password changes: the users file is
// rewritten and the console restarted (the configuration is read at start; a rollout is how a
// deployment applies it) with the same session key, and the old cookies are refused over HTTP
// while an unchanged user's session carries on. A removed token is refused the same way.
const SESSION_SECRET = 'console-session-revocation-secret-0123456789';
const TOKEN = 'console-session-revocation-token-0123456789ab';
const PASSWORDS = { alice: 'alice-password-one', bob: 'bob-password-one', carol: 'carol-password-one' };

let db: TestDatabase;
let boss: PgBoss;
let running: RunningConsole | undefined;
const dir = mkdtempSync(join(tmpdir(), 'hookgate-session-'));
const usersFile = join(dir, 'users');

/** Each user's `name:hash` line; a line is made again only for a new password, as an operator would. */
const lines = new Map<string, { password: string; line: string }>();

async function writeUsers(users: Record<string, string>): Promise<void> {
  for (const name of lines.keys()) if (!(name in users)) lines.delete(name);
  for (const [name, password] of Object.entries(users)) {
    if (lines.get(name)?.password !== password)
      lines.set(name, { password, line: `${name}:${await hashPassword(password)}` });
  }
  writeFileSync(usersFile, `${[...lines.values()].map((entry) => entry.line).join('\n')}\n`);
}

/** The console as `serve --role console` starts it, reading the users file and its tokens now. */
async function restart(tokens: boolean): Promise<RunningConsole> {
  await running?.stop();
  const config = parseConfig(
    {
      endpoints: { shop: { provider: 'standard-webhooks', secrets: [SW_SECRET] } },
      console: {
        port: 0,
        tokens: tokens ? [{ name: 'ci', sha256: createHash('sha256').update(TOKEN).digest('hex') }] : [],
      },
    },
    {},
  );
  running = await startConsole({
    config,
    databaseUrl: db.url,
    boss,
    logger: silentLogger,
    embedded: false,
    env: { CONSOLE_USERS_FILE: usersFile, CONSOLE_SESSION_SECRET: SESSION_SECRET },
  });
  return running;
}

const at = (path: string) => new URL(path, running!.url);

/** Signs in through the form as a browser would; the session cookie as the Cookie header sends it. */
async function signIn(user: keyof typeof PASSWORDS, password: string = PASSWORDS[user]): Promise<string> {
  const form = await fetch(at('/login'));
  const nonce = /(__Host-hookgate_login=[^;]+)/.exec(form.headers.get('set-cookie') ?? '')?.[1];
  const csrf = /name="_csrf" value="([^"]+)"/.exec(await form.text())?.[1];
  expect(nonce && csrf).toBeTruthy();
  const answer = await fetch(at('/login'), {
    method: 'POST',
    redirect: 'manual',
    headers: { cookie: nonce!, 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ _csrf: csrf!, next: '/', user, password }).toString(),
  });
  expect(answer.status).toBe(303);
  const session = /(__Host-hookgate_session=[^;]+)/.exec(answer.headers.get('set-cookie') ?? '')?.[1];
  expect(session).toBeTruthy();
  return session!;
}

/** What the console answers a session: 200 with the page, or 303 to the sign-in page. */
async function overview(
  cookie: string,
): Promise<{ status: number; user: string | null; csrf: string | null }> {
  const page = await fetch(at('/'), { headers: { cookie }, redirect: 'manual' });
  const text = await page.text();
  return {
    status: page.status,
    user: /<span class="user">([^<]+)<\/span>/.exec(text)?.[1] ?? null,
    csrf: /name="_csrf" value="([^"]+)"/.exec(text)?.[1] ?? null,
  };
}

/** An action's preview, a state-changing POST with the session and its CSRF token. */
async function pausePreview(cookie: string, csrf: string): Promise<number> {
  const answer = await fetch(at('/actions/pause/preview'), {
    method: 'POST',
    redirect: 'manual',
    headers: { cookie, 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ _csrf: csrf, endpoint: 'shop' }).toString(),
  });
  return answer.status;
}

beforeAll(async () => {
  db = await createTestDatabase();
  boss = createBoss({
    connectionString: db.url,
    max: 2,
    supervise: false,
    applicationName: 'session-revocation',
  });
  boss.on('error', () => {});
  await boss.start();
});

afterAll(async () => {
  await running?.stop();
  await boss?.stop({ graceful: false, close: true });
  await db?.drop();
  rmSync(dir, { recursive: true, force: true });
});

describe('console sessions end with their user', () => {
  const cookies: Record<string, string> = {};
  const tokens: Record<string, string> = {};

  it('signs three users in; each session reads pages and previews actions', async () => {
    await writeUsers(PASSWORDS);
    await restart(true);
    for (const user of ['alice', 'bob', 'carol'] as const) {
      cookies[user] = await signIn(user);
      const page = await overview(cookies[user]);
      expect([page.status, page.user]).toEqual([200, user]);
      tokens[user] = page.csrf!;
      expect(await pausePreview(cookies[user], tokens[user])).toBe(200);
    }
    const bearer = await fetch(at('/'), {
      headers: { authorization: `Bearer ${TOKEN}` },
      redirect: 'manual',
    });
    expect(bearer.status).toBe(200);
  });

  it('after a restart with the same key and users, every session carries on', async () => {
    await restart(true);
    for (const user of ['alice', 'bob', 'carol'] as const)
      expect((await overview(cookies[user]!)).status).toBe(200);
  });

  it('after alice is removed and bob given a new password, their old cookies are refused; carol carries on', async () => {
    await writeUsers({ bob: 'bob-password-two', carol: PASSWORDS.carol });
    await restart(false);
    for (const user of ['alice', 'bob'] as const) {
      const page = await overview(cookies[user]!);
      expect([user, page.status, page.user]).toEqual([user, 303, null]);
      // A state-changing request with the old cookie and its CSRF token: not signed in at all.
      expect(await pausePreview(cookies[user]!, tokens[user]!)).toBe(401);
    }
    expect(await overview(cookies.carol!)).toMatchObject({ status: 200, user: 'carol' });
    expect(await pausePreview(cookies.carol!, tokens.carol!)).toBe(200);
    // Bob signs in with the new password only; alice not at all.
    const bob = await signIn('bob', 'bob-password-two');
    expect(await overview(bob)).toMatchObject({ status: 200, user: 'bob' });
    const refused = await fetch(at('/login'));
    expect(refused.status).toBe(200);
    // The token removed from the configuration is refused.
    const bearer = await fetch(at('/'), {
      headers: { authorization: `Bearer ${TOKEN}` },
      redirect: 'manual',
    });
    expect(bearer.status).toBe(303);
  });
});
