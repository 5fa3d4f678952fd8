import { spawn } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort } from '../../services/core/db/embedded.ts';
import { createTestDatabase, type TestDatabase } from '../support/database.ts';
import { post, standardWebhook } from '../support/deliveries.ts';
import { CLI, REPO_ROOT, waitFor, workerConfigDocument, writeConfigFile } from '../support/worker-harness.ts';

const SECRET = 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw';

let db: TestDatabase;

beforeAll(async () => {
  db = await createTestDatabase();
});

afterAll(async () => {
  await db?.drop();
});

describe('serve --role all', () => {
  it('accepts a delivery, applies it, and exits 0 on SIGTERM', async () => {
    const configFile = writeConfigFile(workerConfigDocument({ demo: { handler: 'record' } }));
    const port = await freePort();
    const child = spawn(process.execPath, [CLI, 'serve', '--role', 'all', '--config', configFile], {
      cwd: REPO_ROOT,
      env: { ...process.env, DATABASE_URL: db.url, PORT: String(port), METRICS_PORT: '0', LOG_LEVEL: 'warn' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    child.stdout.on('data', (chunk: Buffer) => {
      output += chunk.toString();
    });
    child.stderr.on('data', (chunk: Buffer) => {
      output += chunk.toString();
    });
    const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
    try {
      const url = `http://127.0.0.1:${port}/webhooks/demo`;
      const delivery = standardWebhook(SECRET, { eventId: 'demo_1' });
      const reply = await waitFor('gateway up', async () => {
        try {
          return await post(url, delivery);
        } catch {
          return null;
        }
      });
      expect(reply.status).toBe(200);
      await waitFor('applied', async () => {
        const r = await db.pool.query(
          `SELECT status FROM hookgate.inbox WHERE endpoint = 'demo' AND event_id = 'demo_1'`,
        );
        return r.rows[0]?.status === 'processed';
      });
      child.kill('SIGTERM');
      expect(await exited).toBe(0);
    } catch (error) {
      child.kill('SIGKILL');
      throw new Error(`${String(error)}\n--- process output ---\n${output}`);
    }
  });
});
