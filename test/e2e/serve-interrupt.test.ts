import { spawn } from 'node:child_process';
import { chmodSync, copyFileSync, mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort } from '../../services/core/db/embedded.ts';
import { createTestDatabase, type TestDatabase } from '../support/database.ts';
import { embeddedUrl } from '../support/embedded-url.ts';
import { CLI, ROOT, runHookgate } from '../support/process.ts';
import { waitFor } from '../support/worker-harness.ts';

// Ctrl-C in a terminal sends SIGINT to the whole process group: hookgate and the embedded
// PostgreSQL it started. That must end as cleanly as a SIGTERM, and the example configuration
// must start without warnings.
let dir: string;
let db: TestDatabase;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'hookgate-interrupt-'));
  chmodSync(dir, 0o755);
  copyFileSync(join(ROOT, 'hookgate.example.yaml'), join(dir, 'hookgate.yaml'));
  db = await createTestDatabase();
});

afterAll(async () => {
  rmSync(dir, { recursive: true, force: true });
  await db?.drop();
});

describe('serve', () => {
  it('starts the example configuration without warnings (demo secrets aside) and stops cleanly on Ctrl-C', async () => {
    const child = spawn(process.execPath, [CLI, 'serve', '--config', 'hookgate.yaml'], {
      cwd: dir,
      // Its own process group, as a shell gives a foreground job: the signal reaches every member.
      detached: true,
      env: {
        ...process.env,
        DATABASE_URL: '',
        LOG_LEVEL: 'info',
        PORT: String(await freePort()),
        METRICS_PORT: String(await freePort()),
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    child.stdout.on('data', (chunk: Buffer) => {
      output += chunk.toString();
    });
    child.stderr.on('data', (chunk: Buffer) => {
      output += chunk.toString();
    });
    const exited = new Promise<number | string>((resolve) =>
      child.on('exit', (code, signal) => resolve(code ?? signal ?? 'unknown')),
    );
    const deadline = Date.now() + 120_000;
    while (!output.includes('hookgate is serving') && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    expect(output).toContain('hookgate is serving');
    // Interrupted idle, as a developer's Ctrl-C finds it: the wake-up listener listening and no
    // worker statement running (seen in the server's own sessions).
    const watcher = new pg.Client({ connectionString: embeddedUrl(dir) });
    await watcher.connect();
    try {
      await waitFor('the worker idle and listening', async () => {
        const { rows } = await watcher.query<{ listening: number; busy: number }>(
          `SELECT count(*) FILTER (WHERE application_name = 'hookgate-worker-listen' AND query ILIKE 'LISTEN %')::int AS listening,
                  count(*) FILTER (WHERE application_name = 'hookgate-worker' AND state <> 'idle')::int AS busy
             FROM pg_stat_activity WHERE datname = current_database()`,
        );
        return rows[0]!.listening === 1 && rows[0]!.busy === 0;
      });
    } finally {
      await watcher.end();
    }
    process.kill(-child.pid!, 'SIGINT');
    expect(await exited).toBe(0);
    const lines = output
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as { level: string; msg: string });
    const warnings = lines.filter(
      (line) => ['warn', 'error', 'fatal'].includes(line.level) && !line.msg.startsWith('DEMO ONLY'),
    );
    expect(warnings.map((line) => line.msg)).toEqual([]);
    expect(lines.at(-1)?.msg).toBe('stopped cleanly');
  }, 180_000);

  it('a metrics port already in use is one coded line, exit 1', async () => {
    const blocker = createServer();
    await new Promise<void>((resolve) => blocker.listen(0, '127.0.0.1', resolve));
    const port = (blocker.address() as { port: number }).port;
    try {
      const run = await runHookgate(['serve', '--role', 'worker', '--config', join(dir, 'hookgate.yaml')], {
        env: {
          DATABASE_URL: db.url,
          METRICS_PORT: String(port),
          LISTEN_ADDRESS: '127.0.0.1',
          DEMO_WEBHOOK_SECRET: `whsec_${Buffer.from('a test secret, not the demo one').toString('base64')}`,
          STRIPE_WEBHOOK_SECRET: 'whsec_test_stripe_secret_for_hookgate',
        },
      });
      expect(run.code, run.output).toBe(1);
      expect(run.output).toMatch(
        new RegExp(`hookgate: port_in_use: 127\\.0\\.0\\.1:${port} is already in use`),
      );
      expect(run.output).not.toMatch(/\n\s+at .+:\d+:\d+/);
    } finally {
      blocker.close();
    }
  }, 60_000);
});
