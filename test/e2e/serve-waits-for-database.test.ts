import { createServer, type Server, Socket } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort } from '../../services/core/db/embedded.ts';
import { createTestDatabase, type TestDatabase } from '../support/database.ts';
import { startHookgate } from '../support/process.ts';
import { writeConfigFile } from '../support/worker-harness.ts';

// A gateway or worker started while PostgreSQL is down (a node restart, a failover, a cluster
// coming up in any order) waits for it, up to database.startupTimeout, instead of exiting into
// a crash loop whose growing backoff outlasts the outage. The "database" here is a TCP relay to
// the test's PostgreSQL that only starts listening a few seconds after the gateway.

let db: TestDatabase;
let relay: Server | undefined;

beforeAll(async () => {
  db = await createTestDatabase();
});

afterAll(async () => {
  await new Promise<void>((resolve) => (relay ? relay.close(() => resolve()) : resolve()));
  await db?.drop();
});

/** Starts relaying `port` to the test database. */
async function startRelay(port: number): Promise<Server> {
  const target = new URL(db.url);
  const server = createServer((client) => {
    const upstream = new Socket();
    upstream.connect(Number(target.port), target.hostname);
    client.pipe(upstream).pipe(client);
    const close = () => {
      client.destroy();
      upstream.destroy();
    };
    client.on('error', close);
    upstream.on('error', close);
  });
  await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve));
  return server;
}

const config = (startupTimeout: string) =>
  writeConfigFile({
    database: { startupTimeout },
    endpoints: {
      orders: { provider: 'standard-webhooks', secrets: ['whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw'] },
    },
  });

function urlOn(port: number): string {
  const url = new URL(db.url);
  url.port = String(port);
  return url.toString();
}

describe('serve with the database down at start', () => {
  it('waits for it and serves once it is back', async () => {
    const dbPort = await freePort();
    const httpPort = await freePort();
    const gateway = startHookgate(['serve', '--role', 'gateway', '--config', config('60s')], {
      env: { DATABASE_URL: urlOn(dbPort), PORT: String(httpPort), METRICS_PORT: '0' },
    });
    try {
      await gateway.waitFor(/is not reachable yet; waiting for it/, 20_000);
      expect(gateway.output()).toMatch(new RegExp(`PostgreSQL at 127\\.0\\.0\\.1:${dbPort}`));
      // Still waiting, not exited: it has tried again, and again (each try is logged).
      await gateway.waitFor(/"tries":3\b.*is not reachable yet/, 20_000);
      expect(gateway.child.exitCode).toBeNull();
      relay = await startRelay(dbPort);
      await gateway.waitFor(/gateway listening/, 30_000);
      const ready = await fetch(`http://127.0.0.1:${httpPort}/readyz`);
      expect(ready.status).toBe(200);
    } finally {
      gateway.child.kill('SIGTERM');
      await gateway.exited();
    }
  }, 60_000);

  it('stops at once on SIGTERM while it waits, with its log lines written and a non-zero exit', async () => {
    const dbPort = await freePort();
    const gateway = startHookgate(['serve', '--role', 'gateway', '--config', config('60s')], {
      env: { DATABASE_URL: urlOn(dbPort), PORT: '0', METRICS_PORT: '0' },
    });
    await gateway.waitFor(/is not reachable yet; waiting for it/, 20_000);
    const signalled = Date.now();
    gateway.child.kill('SIGTERM');
    expect(await gateway.exited()).toBe(143);
    expect(Date.now() - signalled).toBeLessThan(5_000);
    expect(gateway.output()).toMatch(/"signal":"SIGTERM".*"msg":"stopped before serving"/);
  }, 60_000);

  it('gives up after database.startupTimeout with one coded line, naming the host, not the password', async () => {
    const dbPort = await freePort();
    const url = new URL(urlOn(dbPort));
    url.password = 'hunter2-not-here';
    const started = Date.now();
    const gateway = startHookgate(['serve', '--role', 'gateway', '--config', config('2s')], {
      env: { DATABASE_URL: url.toString(), PORT: '0', METRICS_PORT: '0' },
    });
    const code = await gateway.exited();
    const elapsed = Date.now() - started;
    expect(code).toBe(1);
    expect(elapsed).toBeGreaterThanOrEqual(2_000);
    expect(gateway.output()).toMatch(/database_unreachable/);
    expect(gateway.output()).not.toMatch(/hunter2-not-here/);
  }, 60_000);
});
