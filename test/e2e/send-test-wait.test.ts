import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { freePort } from '../../services/core/db/embedded.ts';
import { createTestDatabase, type TestDatabase } from '../support/database.ts';
import { runHookgate, startHookgate } from '../support/process.ts';
import { workerConfigDocument } from '../support/worker-harness.ts';

// `send-test --wait` is what the chart's `helm test` Pod runs: it must fail while no worker
// settles the event, and succeed once one does.
let db: TestDatabase;
let configFile: string;

beforeAll(async () => {
  db = await createTestDatabase();
  const dir = mkdtempSync(join(tmpdir(), 'hookgate-send-test-'));
  configFile = join(dir, 'hookgate.yaml');
  writeFileSync(configFile, stringify(workerConfigDocument({ demo: { handler: 'record' } })));
});

afterAll(async () => {
  await db?.drop();
});

describe('send-test --wait', () => {
  it('fails with send_test_timeout while no worker runs, then reports the test event settled (ignored) once one does', async () => {
    const port = await freePort();
    const env = { DATABASE_URL: db.url, PORT: String(port), METRICS_PORT: '0', LOG_LEVEL: 'info' };
    const gateway = startHookgate(['serve', '--role', 'gateway', '--config', configFile], { env });
    let worker: ReturnType<typeof startHookgate> | undefined;
    try {
      await gateway.waitFor(/hookgate is serving/);
      const url = `http://127.0.0.1:${port}`;
      const alone = await runHookgate(
        [
          'send-test',
          '--endpoint',
          'demo',
          '--config',
          configFile,
          '--url',
          url,
          '--duplicates',
          '0',
          '--wait',
          '2s',
        ],
        { env },
      );
      expect(alone.output).toMatch(/delivery: HTTP 200/);
      expect(alone.output).toMatch(/send_test_timeout: Event \S+ was still pending after 2s/);
      expect(alone.code).toBe(1);
      const pending = await db.pool.query(
        `SELECT count(*)::int AS n FROM hookgate.inbox WHERE status = 'pending'`,
      );
      expect(pending.rows[0].n).toBe(1);

      worker = startHookgate(['serve', '--role', 'worker', '--config', configFile], {
        env: { ...env, PORT: '0' },
      });
      await worker.waitFor(/hookgate is serving/);
      const served = await runHookgate(
        [
          'send-test',
          '--endpoint',
          'demo',
          '--config',
          configFile,
          '--url',
          url,
          '--duplicates',
          '0',
          '--wait',
          '30s',
        ],
        { env },
      );
      expect(served.output).toMatch(/event \S+: ignored/);
      expect(served.code).toBe(0);
    } finally {
      gateway.child.kill('SIGTERM');
      worker?.child.kill('SIGTERM');
      await Promise.all([gateway.exited(), worker?.exited()]);
    }
  });

  it('refuses a --wait that is not a duration', async () => {
    const result = await runHookgate(
      ['send-test', '--endpoint', 'demo', '--config', configFile, '--wait', 'soon'],
      { env: { DATABASE_URL: db.url } },
    );
    expect(result.code).toBe(2);
    expect(result.output).toMatch(/usage_invalid: --wait "soon" is not a duration between 1s and 1h/);
  });
});
