import { Agent, request as httpRequest } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort } from '../../services/core/db/embedded.ts';
import { createTestDatabase, type TestDatabase } from '../support/database.ts';
import { type Delivery, post, standardWebhook } from '../support/deliveries.ts';
import { type RunningProcess, startHookgate } from '../support/process.ts';
import { writeConfigFile } from '../support/worker-harness.ts';

// SIGTERM with nothing in front of the gateway (no load balancer taking it out of rotation
// first): deliveries already sent must be answered 200, never reset, never 503; what arrives
// on connections the gateway still has open is served too; only new connections are refused.
const SECRET = 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw';

let db: TestDatabase;
let configFile: string;

beforeAll(async () => {
  db = await createTestDatabase();
  configFile = writeConfigFile({
    // Claims held by the test's lock must outlast it rather than time out.
    database: { statementTimeout: '30s' },
    endpoints: { demo: { provider: 'standard-webhooks', secrets: ['${DEMO_SECRET}'] } },
  });
}, 60_000);

afterAll(async () => {
  await db?.drop();
});

async function serve(): Promise<{ process: RunningProcess; url: string }> {
  const port = await freePort();
  const process = startHookgate(['serve', '--role', 'gateway', '--config', configFile], {
    env: {
      DATABASE_URL: db.url,
      PORT: String(port),
      METRICS_PORT: String(await freePort()),
      DEMO_SECRET: SECRET,
      LOG_LEVEL: 'info',
    },
  });
  await process.waitFor(/hookgate is serving/, 60_000);
  return { process, url: `http://127.0.0.1:${port}` };
}

interface Sent {
  readonly delivery: Delivery;
  /** When the request's last byte was handed to the kernel (its 'finish'), ms since epoch. */
  writtenAt: number | null;
  status: number | null;
  connection: string | undefined;
  error: string | null;
}

/** POSTs through `agent` (keep-alive connections), noting when the request was fully written. */
function send(url: string, agent: Agent, delivery: Delivery): { sent: Sent; done: Promise<Sent> } {
  const sent: Sent = { delivery, writtenAt: null, status: null, connection: undefined, error: null };
  const done = new Promise<Sent>((resolve) => {
    const req = httpRequest(
      `${url}/webhooks/demo`,
      { method: 'POST', headers: delivery.headers, agent },
      (res) => {
        res.resume();
        res.on('end', () => {
          sent.status = res.statusCode ?? null;
          sent.connection = res.headers.connection;
          resolve(sent);
        });
      },
    );
    req.on('finish', () => {
      sent.writtenAt = Date.now();
    });
    req.on('error', (error: NodeJS.ErrnoException) => {
      sent.error = error.code ?? error.message;
      resolve(sent);
    });
    req.end(delivery.body);
  });
  return { sent, done };
}

async function storedIds(ids: readonly string[]): Promise<Set<string>> {
  const result = await db.pool.query<{ event_id: string }>(
    'SELECT event_id FROM hookgate.inbox WHERE endpoint = $1 AND event_id = ANY($2)',
    ['demo', ids],
  );
  return new Set(result.rows.map((row) => row.event_id));
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe('SIGTERM drain (real process)', () => {
  it('answers the deliveries in flight, serves what arrives on open connections, refuses new ones', async () => {
    const { process, url } = await serve();
    const agent = new Agent({ keepAlive: true, maxSockets: 4 });
    const lock = await db.pool.connect();
    try {
      // Four keep-alive connections, idle in the agent's pool.
      const warm = await Promise.all(
        Array.from({ length: 4 }, () => send(url, agent, standardWebhook(SECRET)).done),
      );
      expect(warm.map((w) => w.status)).toEqual([200, 200, 200, 200]);

      // Claims wait on a lock the test holds: six deliveries are in flight at the signal.
      await lock.query('BEGIN');
      await lock.query('LOCK TABLE hookgate.inbox IN SHARE MODE');
      const held = Array.from({ length: 6 }, () => standardWebhook(SECRET));
      const heldReplies = held.map((delivery) => post(`${url}/webhooks/demo`, delivery));
      for (let i = 0; i < 100; i += 1) {
        const waiting = await db.pool.query(
          `SELECT count(*)::int AS n FROM pg_stat_activity
            WHERE wait_event_type = 'Lock' AND application_name = 'hookgate-gateway'`,
        );
        if (waiting.rows[0].n > 0) break;
        await sleep(100);
      }
      await sleep(500);

      process.child.kill('SIGTERM');
      await process.waitFor(/"shutting down"/);
      await sleep(200);
      // Sent after the signal on connections the gateway still has open: served, and closed after.
      const late = Array.from({ length: 4 }, () => send(url, agent, standardWebhook(SECRET)));
      // A new connection after the signal: refused, nothing half-read.
      const fresh = await post(`${url}/webhooks/demo`, standardWebhook(SECRET)).then(
        () => 'answered',
        (error: NodeJS.ErrnoException) => error.code,
      );
      expect(fresh).toBe('ECONNREFUSED');
      await sleep(300);
      await lock.query('COMMIT');

      const replies = await Promise.all(heldReplies);
      expect(replies.map((r) => `${r.status} ${r.json.status}`)).toEqual(Array(6).fill('200 accepted'));
      const lateReplies = await Promise.all(late.map((l) => l.done));
      expect(lateReplies.map((r) => `${r.status} ${r.error ?? ''} ${r.connection}`)).toEqual(
        Array(4).fill('200  close'),
      );
      expect(await process.exited()).toBe(0);
      expect(process.output()).toContain('stopped cleanly');
      const ids = [...held, ...late.map((l) => l.sent.delivery)].map((d) => d.eventId);
      expect((await storedIds(ids)).size).toBe(10);
    } finally {
      lock.release();
      agent.destroy();
      process.child.kill('SIGKILL');
    }
  }, 120_000);

  it('under load: every delivery written before the signal is answered 200; no 503 and no reset at all', async () => {
    const { process, url } = await serve();
    const agent = new Agent({ keepAlive: true, maxSockets: 32 });
    const RATE = 200;
    const SIGNAL_AT_MS = 2_500;
    const SECONDS = 5;
    const all: Promise<Sent>[] = [];
    let signalAt = 0;
    try {
      const start = Date.now();
      const signal = setTimeout(() => {
        signalAt = Date.now();
        process.child.kill('SIGTERM');
      }, SIGNAL_AT_MS);
      for (let i = 0; i < RATE * SECONDS; i += 1) {
        const due = start + (i * 1000) / RATE;
        if (due > Date.now()) await sleep(due - Date.now());
        all.push(send(url, agent, standardWebhook(SECRET)).done);
      }
      clearTimeout(signal);
      const results = await Promise.all(all);
      expect(await process.exited()).toBe(0);

      const before = results.filter((r) => r.writtenAt !== null && r.writtenAt < signalAt);
      const after = results.filter((r) => !before.includes(r));
      const summary = (list: readonly Sent[]) => {
        const counts: Record<string, number> = {};
        for (const r of list) {
          const key = r.status === null ? `error ${r.error}` : String(r.status);
          counts[key] = (counts[key] ?? 0) + 1;
        }
        return counts;
      };
      // The premise: the signal landed mid-run, with deliveries on both sides of it.
      expect(before.length).toBeGreaterThan(RATE);
      expect(after.length).toBeGreaterThan(RATE);
      expect(summary(before)).toEqual({ 200: before.length });
      // After the signal: served on a connection still open, or refused at connect, never cut.
      const afterCounts = summary(after);
      for (const key of Object.keys(afterCounts)) expect(['200', 'error ECONNREFUSED']).toContain(key);
      expect(afterCounts['200'] ?? 0).toBeGreaterThan(0);

      const acknowledged = results.filter((r) => r.status === 200).map((r) => r.delivery.eventId);
      expect((await storedIds(acknowledged)).size).toBe(acknowledged.length);
    } finally {
      agent.destroy();
      process.child.kill('SIGKILL');
    }
  }, 120_000);
});
