import { mkdtempSync, writeFileSync } from 'node:fs';
import { createServer, type Server, Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort } from '../../services/core/db/embedded.ts';
import { createTestDatabase, type TestDatabase } from '../support/database.ts';
import { post, standardWebhook } from '../support/deliveries.ts';
import { runHookgate, startHookgate } from '../support/process.ts';
import { installEffects } from '../support/worker-effects.ts';
import { waitFor, workerConfigDocument, writeConfigFile } from '../support/worker-harness.ts';

// What an SRE sees of a running `serve`: which database, one JSON object per line with the level
// as a word, a delivery line saying who sent what and how long it took, SIGHUP not killing it, a
// database outage written as state changes rather than a flood, and the same words for a wrong
// password as the one-shot commands use.
const SECRET = 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw';
let db: TestDatabase;
let configFile: string;

beforeAll(async () => {
  db = await createTestDatabase();
  await installEffects(db.pool);
  // beta's secret comes from a mounted file, as Vault agent writes one (a trailing newline).
  const secretFile = join(mkdtempSync(join(tmpdir(), 'hookgate-secret-')), 'beta-secret');
  writeFileSync(secretFile, `${SECRET}\n`, { mode: 0o600 });
  configFile = writeConfigFile(
    workerConfigDocument(
      {
        alpha: {
          handler: 'project',
          extract: { entityType: '/data/object', entityId: '/data/id', version: '/data/version' },
        },
        beta: { handler: 'record', secrets: [`\${file:${secretFile}}`] },
      },
      { concurrency: 2, retryLimit: 1, retryDelay: '1s' },
    ),
  );
});

afterAll(async () => {
  await db?.drop();
});

/**
 * A TCP relay to the test database that can be cut (every connection dropped, and every new one
 * dropped as soon as it arrives, counted) and restored.
 */
class Relay {
  private server: Server | null = null;
  private readonly sockets = new Set<Socket>();
  private cutOff = false;
  /** Connections attempted while cut: how often hookgate has tried, and failed, meanwhile. */
  refused = 0;
  readonly port: number;

  constructor(port: number) {
    this.port = port;
  }

  async open(): Promise<void> {
    this.cutOff = false;
    if (this.server) return;
    const target = new URL(db.url);
    this.server = createServer((client) => {
      if (this.cutOff) {
        this.refused += 1;
        client.destroy();
        return;
      }
      const upstream = new Socket();
      upstream.connect(Number(target.port), target.hostname);
      client.pipe(upstream).pipe(client);
      this.sockets.add(client).add(upstream);
      const close = () => {
        client.destroy();
        upstream.destroy();
        this.sockets.delete(client);
        this.sockets.delete(upstream);
      };
      client.on('error', close).on('close', close);
      upstream.on('error', close).on('close', close);
    });
    await new Promise<void>((resolve) => this.server!.listen(this.port, '127.0.0.1', resolve));
  }

  cut(): void {
    this.cutOff = true;
    this.refused = 0;
    for (const socket of this.sockets) socket.destroy();
  }

  async close(): Promise<void> {
    this.cut();
    const server = this.server;
    this.server = null;
    await new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve()));
  }

  url(password?: string): string {
    const url = new URL(db.url);
    url.port = String(this.port);
    if (password !== undefined) url.password = password;
    return url.toString();
  }
}

const lines = (output: string) =>
  output
    .split('\n')
    .filter((line) => line.startsWith('{'))
    .map((line) => JSON.parse(line) as Record<string, unknown> & { level: unknown; msg: string });

describe('serve, as operated', () => {
  it('names its database, logs levels as words and deliveries with their sender, survives SIGHUP, and writes an outage as state changes', async () => {
    const relay = new Relay(await freePort());
    await relay.open();
    const port = await freePort();
    const server = startHookgate(['serve', '--config', configFile], {
      env: { DATABASE_URL: relay.url(), PORT: String(port), METRICS_PORT: '0', LOG_LEVEL: 'info' },
    });
    try {
      await server.waitFor(/hookgate is serving/, 60_000);
      const password = new URL(db.url).password;
      const using = lines(server.output()).find((line) => line.msg.startsWith('using PostgreSQL at'));
      expect(using).toMatchObject({
        level: 'info',
        database: `127.0.0.1:${relay.port}/${db.name}`,
        msg: `using PostgreSQL at 127.0.0.1:${relay.port}/${db.name}`,
      });
      expect(server.output()).not.toContain(password);

      // One delivery, signed with the secret read from the file (and, as for every process the
      // tests start, never printed): its line says who sent it, with what, how big, how long.
      const delivery = standardWebhook(SECRET);
      const reply = await post(`http://127.0.0.1:${port}/webhooks/beta`, {
        ...delivery,
        headers: { ...delivery.headers, 'user-agent': 'Stripe/1.0 (+https://stripe.com/docs/webhooks)' },
      });
      expect(reply.status).toBe(200);
      const answered = await server.waitFor(/"msg":"delivery answered"/);
      expect(JSON.parse(answered)).toMatchObject({
        level: 'info',
        endpoint: 'beta',
        outcome: 'accepted',
        status: 200,
        event_id: delivery.eventId,
        source: '127.0.0.1',
        user_agent: 'Stripe/1.0 (+https://stripe.com/docs/webhooks)',
        body_bytes: Buffer.byteLength(delivery.body),
        duration_ms: expect.any(Number),
      });

      // SIGHUP: a line saying it is ignored, and the process keeps serving.
      server.child.kill('SIGHUP');
      await server.waitFor(/SIGHUP ignored/);
      // Answering after the signal, through the same process.
      expect((await fetch(`http://127.0.0.1:${port}/healthz`)).status).toBe(200);
      expect(server.child.exitCode).toBeNull();

      // The database goes away: the loops (2 endpoints × (2 + 1)), the queue and the listener all
      // fail, every second or so, until it is back. The log says so once, not once per failure.
      // Back once 20 connections have been refused meanwhile (each a failure the log folds in),
      // rather than after a fixed time.
      const before = server.output().length;
      relay.cut();
      await waitFor('20 connections refused during the outage', async () => relay.refused >= 20, 60_000);
      const during = lines(server.output().slice(before));
      await relay.open();
      const back = JSON.parse(await server.waitFor(/is reachable again/, 30_000)) as {
        failures: Record<string, number>;
      };
      // The flood it folded: failures from several sources, many in all.
      expect(Object.keys(back.failures).length, JSON.stringify(back)).toBeGreaterThanOrEqual(2);
      expect(Object.values(back.failures).reduce((a, b) => a + b, 0)).toBeGreaterThanOrEqual(5);
      const unreachable = during.filter((line) => /is unreachable; retrying/.test(line.msg));
      expect(unreachable, JSON.stringify(during, null, 1)).toHaveLength(1);
      expect(unreachable[0]).toMatchObject({
        level: 'error',
        database: `127.0.0.1:${relay.port}/${db.name}`,
      });
      expect(unreachable[0]!.err).not.toHaveProperty('stack');
      expect(during.filter((line) => line.msg === 'worker step failed')).toEqual([]);
      const loud = during.filter((line) => line.level === 'error' || line.level === 'warn');
      expect(loud.length, JSON.stringify(loud, null, 1)).toBeLessThanOrEqual(4);

      for (const line of lines(server.output())) {
        expect(typeof line.level, line.msg).toBe('string');
        // snake_case keys only.
        for (const key of Object.keys(line)) expect(key, line.msg).toMatch(/^[a-z][a-z0-9_]*$/);
      }
    } finally {
      server.child.kill('SIGTERM');
      await server.exited();
      await relay.close();
    }
  }, 120_000);

  it('the last attempt of a failing event does not say "will retry"', async () => {
    await db.pool.query(`INSERT INTO public.fail_control (event_id) VALUES ('msg_always_fails')`);
    const port = await freePort();
    const server = startHookgate(['serve', '--config', configFile], {
      env: { DATABASE_URL: db.url, PORT: String(port), METRICS_PORT: '0', LOG_LEVEL: 'info' },
    });
    try {
      await server.waitFor(/hookgate is serving/, 60_000);
      const delivery = standardWebhook(SECRET, {
        eventId: 'msg_always_fails',
        data: { object: 'thing', id: 'thing_1', version: 1 },
      });
      expect((await post(`http://127.0.0.1:${port}/webhooks/alpha`, delivery)).status).toBe(200);
      await server.waitFor(/failed on its last attempt/, 30_000);
      const failures = lines(server.output()).filter((line) => line.event_id === 'msg_always_fails');
      const messages = failures.map((line) => line.msg);
      // retryLimit 1: two attempts; only the first has a retry left.
      expect(messages.filter((msg) => msg === 'apply failed; will retry')).toHaveLength(1);
      expect(messages.filter((msg) => /failed on its last attempt/.test(msg))).toHaveLength(1);
      expect(failures.find((line) => /last attempt/.test(line.msg))).toMatchObject({
        level: 'warn',
        last_attempt: true,
        error: expect.stringMatching(/injected failure/),
      });
    } finally {
      server.child.kill('SIGTERM');
      await server.exited();
    }
  }, 90_000);

  it('a port in use ends the start before the worker starts', async () => {
    const taken = createServer();
    const port = await freePort();
    await new Promise<void>((resolve) => taken.listen(port, '0.0.0.0', resolve));
    try {
      const run = await runHookgate(['serve', '--config', configFile], {
        env: { DATABASE_URL: db.url, PORT: String(port), METRICS_PORT: '0', LOG_LEVEL: 'info' },
      });
      expect(run.code).toBe(1);
      expect(run.output).toMatch(/port_in_use: .*:\d+ is already in use/);
      expect(run.output).not.toContain('worker started');
    } finally {
      await new Promise((resolve) => taken.close(resolve));
    }
  }, 60_000);

  it('a wrong password is worded the same by serve and by one-shot commands: database_refused, with the host', async () => {
    const relay = new Relay(await freePort());
    await relay.open();
    try {
      const env = { DATABASE_URL: relay.url('not-the-password'), PORT: '0', METRICS_PORT: '0' };
      const serve = await runHookgate(['serve', '--config', configFile], { env });
      const stats = await runHookgate(['stats'], { env });
      const refused = new RegExp(
        `^hookgate: database_refused: PostgreSQL at 127\\.0\\.0\\.1:${relay.port} refused the connection: password authentication failed`,
        'm',
      );
      for (const run of [serve, stats]) {
        expect(run.code, run.output).toBe(1);
        expect(run.output).toMatch(refused);
        expect(run.output).not.toContain('not-the-password');
        expect(run.output).not.toMatch(/database_unreachable/);
      }
    } finally {
      await relay.close();
    }
  }, 60_000);
});
