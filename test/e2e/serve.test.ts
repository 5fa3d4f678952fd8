import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort } from '../../services/core/db/embedded.ts';
import { createTestDatabase, type TestDatabase } from '../support/database.ts';
import { post, standardWebhook } from '../support/deliveries.ts';
import { type RunningProcess, runHookgate, startHookgate } from '../support/process.ts';

const SECRET = 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw';

let db: TestDatabase;
let configFile: string;

beforeAll(async () => {
  db = await createTestDatabase({ migrated: false });
  const dir = mkdtempSync(join(tmpdir(), 'hookgate-e2e-'));
  configFile = join(dir, 'hookgate.yaml');
  writeFileSync(
    configFile,
    ['endpoints:', '  demo:', '    provider: standard-webhooks', '    secrets: ["${DEMO_SECRET}"]', ''].join(
      '\n',
    ),
  );
});

afterAll(async () => {
  await db?.drop();
});

async function serve(): Promise<{ process: RunningProcess; url: string }> {
  const port = await freePort();
  const metricsPort = await freePort();
  const process = startHookgate(['serve', '--role', 'gateway', '--config', configFile], {
    env: { DATABASE_URL: db.url, PORT: String(port), METRICS_PORT: String(metricsPort), DEMO_SECRET: SECRET },
  });
  await process.waitFor(/hookgate is serving/);
  return { process, url: `http://127.0.0.1:${port}` };
}

describe('hookgate serve (real processes)', () => {
  it('refuses to serve an unmigrated database, saying what to do', async () => {
    const result = await runHookgate(['serve', '--role', 'gateway', '--config', configFile], {
      env: { DATABASE_URL: db.url, DEMO_SECRET: SECRET, PORT: '0', METRICS_PORT: '0' },
    });
    // Not ready is an operational failure (exit 1), not a usage error.
    expect(result.code).toBe(1);
    expect(result.output).toContain('database_not_migrated');
    expect(result.output).toContain('hookgate migrate');
  });

  it('one-shot commands refuse an unmigrated database the same way', async () => {
    const result = await runHookgate(['stats'], { env: { DATABASE_URL: db.url } });
    expect(result.code).toBe(1);
    expect(result.output).toContain('database_not_migrated');
  });

  it('refuses an invalid configuration, naming the key', async () => {
    const result = await runHookgate(['serve', '--config', configFile], { env: { DATABASE_URL: db.url } });
    expect(result.code).toBe(2);
    expect(result.output).toContain('endpoints.demo.secrets[0]: environment variable DEMO_SECRET is not set');
  });

  it('migrates, serves, takes send-test deliveries and their duplicates, and stops cleanly on SIGTERM', async () => {
    expect((await runHookgate(['migrate'], { env: { DATABASE_URL: db.url } })).code).toBe(0);
    const { process, url } = await serve();
    try {
      expect((await fetch(`${url}/healthz`)).status).toBe(200);
      expect((await fetch(`${url}/readyz`)).status).toBe(200);

      const sent = await runHookgate(
        ['send-test', '--endpoint', 'demo', '--config', configFile, '--duplicates', '2', '--url', url],
        {
          env: { DEMO_SECRET: SECRET },
        },
      );
      expect(sent.code).toBe(0);
      expect(sent.output).toMatch(/delivery: HTTP 200 .*"status":"accepted"/);
      expect(sent.output).toMatch(/duplicate 1: HTTP 200 .*"status":"duplicate"/);
      expect(sent.output).toMatch(/duplicate 2: HTTP 200 .*"status":"duplicate"/);
      const rows = await db.pool.query(
        `SELECT count(*)::int AS n FROM hookgate.inbox WHERE endpoint = 'demo'`,
      );
      expect(rows.rows[0].n).toBe(1);

      // SIGTERM while deliveries are in flight: each one either gets its 200 after commit, or
      // no answer at all, and the process exits 0.
      const deliveries = Array.from({ length: 200 }, () => standardWebhook(SECRET));
      let answered = 0;
      let firstAnswer: () => void = () => {};
      const someAnswered = new Promise<void>((resolve) => {
        firstAnswer = resolve;
      });
      const inFlight = deliveries.map((d) =>
        post(`${url}/webhooks/demo`, d).then(
          (reply) => {
            answered += 1;
            firstAnswer();
            return reply;
          },
          () => null,
        ),
      );
      // The premise: the signal lands while some deliveries have been answered and others are
      // still in flight.
      await someAnswered;
      process.child.kill('SIGTERM');
      const atSignal = answered;
      expect(atSignal).toBeGreaterThan(0);
      expect(atSignal).toBeLessThan(deliveries.length);
      const replies = await Promise.all(inFlight);
      expect(await process.exited()).toBe(0);
      expect(process.output()).toContain('stopped cleanly');
      const acknowledged = deliveries.filter((_, i) => replies[i]?.status === 200).map((d) => d.eventId);
      expect(acknowledged.length).toBeGreaterThan(0);
      const stored = await db.pool.query('SELECT event_id FROM hookgate.inbox WHERE event_id = ANY($1)', [
        deliveries.map((d) => d.eventId),
      ]);
      const storedIds = new Set(stored.rows.map((r) => r.event_id as string));
      for (const id of acknowledged) expect(storedIds.has(id)).toBe(true);
    } finally {
      process.child.kill('SIGKILL');
    }
  });
});
