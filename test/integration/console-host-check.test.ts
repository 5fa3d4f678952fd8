import { createHash } from 'node:crypto';
import { request } from 'node:http';
import type { PgBoss } from 'pg-boss';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type RunningConsole, startConsole } from '../../services/console/server.ts';
import { parseConfig } from '../../services/core/config/load.ts';
import { createBoss } from '../../services/core/queue/boss.ts';
import { silentLogger } from '../support/apply.ts';
import { createTestDatabase, type TestDatabase } from '../support/database.ts';
import { SW_SECRET } from '../support/gateway.ts';

// DNS rebinding against the demo console (no sign-in): a page on rebind.example, its name
// resolved to 127.0.0.1, sends requests whose Host (and Origin) it chose. The demo answers only
// loopback names and its own address, and the CSRF check does not take a page-chosen Host as the
// console's origin. Forged Host/Origin pairs over HTTP against a console on a real port.
const TOKEN = 'console-host-check-token-0123456789abcdef';

let db: TestDatabase;
let boss: PgBoss;
let demo: RunningConsole;
let signedIn: RunningConsole;

interface Answer {
  readonly status: number;
  readonly text: string;
  readonly cookies: string[];
}

/** One HTTP exchange with exactly these headers (Host included), as a rebinding browser would send. */
function exchange(
  running: RunningConsole,
  path: string,
  headers: Record<string, string>,
  form?: Record<string, string>,
): Promise<Answer> {
  const body = form ? new URLSearchParams(form).toString() : undefined;
  return new Promise((resolve, reject) => {
    const req = request(
      {
        host: '127.0.0.1',
        port: running.port,
        path,
        method: form ? 'POST' : 'GET',
        setHost: false,
        headers: {
          ...headers,
          ...(form
            ? {
                'content-type': 'application/x-www-form-urlencoded',
                'content-length': String(Buffer.byteLength(body!)),
              }
            : {}),
        },
      },
      (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => {
          text += chunk;
        });
        res.on('end', () => {
          const cookies = res.headers['set-cookie'] ?? [];
          resolve({ status: res.statusCode ?? 0, text, cookies: cookies.map((c) => c.split(';')[0]!) });
        });
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

const csrfOf = (text: string) => /name="_csrf" value="([^"]+)"/.exec(text)?.[1];

async function paused(): Promise<number> {
  return (
    await db.pool.query('SELECT count(*)::int AS n FROM hookgate.endpoint_state WHERE paused_at IS NOT NULL')
  ).rows[0].n;
}

/** The whole attack as the page would run it: read a page for its cookie and token, then pause. */
async function attack(running: RunningConsole, host: string, origin: string): Promise<Answer[]> {
  const page = await exchange(running, '/', { host, 'sec-fetch-site': 'same-origin' });
  const token = csrfOf(page.text) ?? 'none';
  const cookie = page.cookies.join('; ');
  const run = await exchange(
    running,
    '/actions/pause',
    { host, origin, cookie, 'sec-fetch-site': 'same-origin' },
    { _csrf: token, endpoint: 'shop', expected: '1' },
  );
  return [page, run];
}

beforeAll(async () => {
  db = await createTestDatabase();
  boss = createBoss({ connectionString: db.url, max: 2, supervise: false, applicationName: 'host-check' });
  boss.on('error', () => {});
  await boss.start();
  const config = (consoleKeys: Record<string, unknown>) =>
    parseConfig(
      {
        endpoints: { shop: { provider: 'standard-webhooks', secrets: [SW_SECRET] } },
        console: { port: 0, ...consoleKeys },
      },
      {},
    );
  // The embedded demo on loopback: no sign-in.
  demo = await startConsole({
    config: config({}),
    databaseUrl: db.url,
    boss,
    logger: silentLogger,
    embedded: true,
    env: {},
  });
  expect(demo.demo).toBe(true);
  signedIn = await startConsole({
    config: config({
      sessionSecret: 'console-host-check-session-secret-0123456789',
      tokens: [{ name: 'ci', sha256: createHash('sha256').update(TOKEN).digest('hex') }],
    }),
    databaseUrl: db.url,
    boss,
    logger: silentLogger,
    embedded: false,
    env: {},
  });
});

afterAll(async () => {
  await demo?.stop();
  await signedIn?.stop();
  await boss?.stop({ graceful: false, close: true });
  await db?.drop();
});

describe('the demo console answers only to this machine', () => {
  it('serves loopback names and its own address', async () => {
    for (const host of [
      `127.0.0.1:${demo.port}`,
      `localhost:${demo.port}`,
      `LOCALHOST:${demo.port}`,
      `127.0.0.2:${demo.port}`,
      `[::1]:${demo.port}`,
    ]) {
      const page = await exchange(demo, '/', { host });
      expect([host, page.status]).toEqual([host, 200]);
    }
  });

  it('refuses every other Host with 421 and a sentence, the probes and sign-in page included', async () => {
    for (const host of [
      `rebind.example:${demo.port}`,
      'rebind.example',
      `127.0.0.1.rebind.example:${demo.port}`,
      `localhost.rebind.example`,
      '10.0.0.5',
      '',
    ]) {
      for (const path of ['/', '/events', '/quarantine', '/login', '/healthz', '/assets/console.css']) {
        const page = await exchange(demo, path, { host });
        expect([host, path, page.status]).toEqual([host, path, 421]);
        expect(page.text).toContain(`open http://127.0.0.1:${demo.port}/`);
        expect(page.text).not.toContain('<html');
      }
    }
  });

  it('a rebinding page choosing Host and Origin alike cannot read the events nor pause an endpoint', async () => {
    const host = `rebind.example:${demo.port}`;
    const [page, run] = await attack(demo, host, `http://${host}`);
    expect([page!.status, run!.status]).toEqual([421, 421]);
    expect(page!.cookies).toEqual([]);
    expect(await paused()).toBe(0);
  });

  it('a page of another origin is refused by the CSRF check even with a loopback Host', async () => {
    const host = `127.0.0.1:${demo.port}`;
    const [page, run] = await attack(demo, host, `http://rebind.example:${demo.port}`);
    expect(page!.status).toBe(200);
    expect(run!.status).toBe(403);
    expect(run!.text).toContain('another origin');
    expect(await paused()).toBe(0);
  });

  it('the console itself, addressed by a loopback name, still pauses (the check refuses only others)', async () => {
    const host = `localhost:${demo.port}`;
    const [page, run] = await attack(demo, host, `http://${host}`);
    expect([page!.status, run!.status]).toEqual([200, 200]);
    expect(await paused()).toBe(1);
    await db.pool.query('UPDATE hookgate.endpoint_state SET paused_at = NULL');
  });
});

describe('a console with sign-in', () => {
  it('serves any Host (Ingress, Service and port-forward names) to a signed-in request', async () => {
    for (const host of [
      'hookgate-console.hookgate.svc.cluster.local',
      'console.example.com',
      `127.0.0.1:${signedIn.port}`,
    ]) {
      const page = await exchange(signedIn, '/', { host, authorization: `Bearer ${TOKEN}` });
      expect([host, page.status]).toEqual([host, 200]);
    }
    // Without credentials, whatever the Host: the sign-in page, nothing else.
    const anonymous = await exchange(signedIn, '/events', { host: 'rebind.example' });
    expect(anonymous.status).toBe(303);
  });
});
