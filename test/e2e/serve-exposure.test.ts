import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort } from '../../services/core/db/embedded.ts';
import { createTestDatabase, type TestDatabase } from '../support/database.ts';
import { post, standardWebhook } from '../support/deliveries.ts';
import { ROOT, runHookgate, startHookgate } from '../support/process.ts';

// What a deployment exposes: the published demo secrets and the listen address.
const SECRET = 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw';
const EXAMPLE = join(ROOT, 'hookgate.example.yaml');

let db: TestDatabase;
let configFile: string;

beforeAll(async () => {
  db = await createTestDatabase();
  const dir = mkdtempSync(join(tmpdir(), 'hookgate-exposure-'));
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

describe('serve: published demo secrets and the listen addresses', () => {
  it('refuses the example config with a real database, naming every demo secret it uses', async () => {
    const result = await runHookgate(['serve', '--config', EXAMPLE], {
      env: { DATABASE_URL: db.url, PORT: '0', METRICS_PORT: '0' },
    });
    expect(result.code).toBe(2);
    expect(result.output).toContain('config_invalid');
    expect(result.output).toContain('published demo secret');
    expect(result.output).toContain('endpoints.demo.secrets[0]');
    expect(result.output).toContain('endpoints.stripe.secrets[0]');
    expect(result.output).not.toContain('hookgate is serving');
  });

  it('refuses a demo secret even when it arrives through the environment variable', async () => {
    const result = await runHookgate(['serve', '--config', configFile], {
      env: {
        DATABASE_URL: db.url,
        PORT: '0',
        METRICS_PORT: '0',
        DEMO_SECRET: 'whsec_yVg1LulcM3w0Om+AAVsaLtF/Sk2F2QRo',
      },
    });
    expect(result.code).toBe(2);
    expect(result.output).toContain('endpoints.demo.secrets[0]');
  });

  it('listens on LISTEN_ADDRESS only, and refuses one that is not an IP address', async () => {
    const port = await freePort();
    const server = startHookgate(['serve', '--role', 'gateway', '--config', configFile], {
      env: {
        DATABASE_URL: db.url,
        PORT: String(port),
        METRICS_PORT: String(await freePort()),
        DEMO_SECRET: SECRET,
        LISTEN_ADDRESS: '127.0.0.2',
      },
    });
    try {
      const line = await server.waitFor(/hookgate is serving/);
      expect(JSON.parse(line).host).toBe('127.0.0.2');
      const delivery = standardWebhook(SECRET);
      expect((await post(`http://127.0.0.2:${port}/webhooks/demo`, delivery)).status).toBe(200);
      // The premise: the same port on another loopback address has nobody listening.
      await expect(fetch(`http://127.0.0.1:${port}/healthz`)).rejects.toThrow();
    } finally {
      server.child.kill('SIGTERM');
    }
    expect(await server.exited()).toBe(0);

    const bad = await runHookgate(['serve', '--config', configFile], {
      env: { DATABASE_URL: db.url, DEMO_SECRET: SECRET, LISTEN_ADDRESS: 'example.com' },
    });
    expect(bad.code).toBe(2);
    expect(bad.output).toContain('LISTEN_ADDRESS="example.com" is not an IP address');
  });

  it('a flood of 2 000 forged deliveries writes a handful of log lines, with the counts', async () => {
    const port = await freePort();
    const server = startHookgate(['serve', '--role', 'gateway', '--config', configFile], {
      env: { DATABASE_URL: db.url, PORT: String(port), METRICS_PORT: '0', DEMO_SECRET: SECRET },
    });
    try {
      await server.waitFor(/hookgate is serving/);
      const before = server.output().length;
      const forged = 'whsec_C2FVsBQIhrscChlQIMV+b5sSYspob7oD';
      for (let round = 0; round < 40; round += 1) {
        const replies = await Promise.all(
          Array.from({ length: 50 }, () =>
            post(`http://127.0.0.1:${port}/webhooks/demo`, standardWebhook(forged)),
          ),
        );
        // The premise: every one of them was refused.
        expect(replies.every((r) => r.status === 401)).toBe(true);
      }
      const logged = server.output().slice(before);
      expect(logged.split('\n').filter((line) => line.includes('signature_invalid')).length).toBe(1);
      expect(logged.length).toBeLessThan(4_000);
    } finally {
      server.child.kill('SIGTERM');
    }
    expect(await server.exited()).toBe(0);
    // On shutdown the window's summary is written: one line, with the count.
    const summary = server
      .output()
      .split('\n')
      .find((line) => line.includes('requests refused'));
    expect(summary).toBeDefined();
    expect(JSON.parse(summary!).refused).toEqual([
      { endpoint: 'demo', outcome: 'signature_invalid', count: 2000 },
    ]);
  });

  it('listens on all interfaces by default with a real database, but keeps /metrics on loopback', async () => {
    const port = await freePort();
    const metricsPort = await freePort();
    const server = startHookgate(['serve', '--role', 'gateway', '--config', configFile], {
      env: {
        DATABASE_URL: db.url,
        PORT: String(port),
        METRICS_PORT: String(metricsPort),
        DEMO_SECRET: SECRET,
      },
    });
    try {
      const line = await server.waitFor(/hookgate is serving/);
      expect(JSON.parse(line).host).toBe('0.0.0.0');
      expect(JSON.parse(line).metrics_host).toBe('127.0.0.1');
      expect((await fetch(`http://127.0.0.2:${port}/healthz`)).status).toBe(200);
      // The metrics listener answers on loopback only: another local address finds nobody.
      expect((await fetch(`http://127.0.0.1:${metricsPort}/metrics`)).status).toBe(200);
      await expect(fetch(`http://127.0.0.2:${metricsPort}/metrics`)).rejects.toThrow();
    } finally {
      server.child.kill('SIGTERM');
    }
    expect(await server.exited()).toBe(0);
  });

  it("binds /metrics and the worker's probes to METRICS_LISTEN_ADDRESS, and refuses one that is not an IP address", async () => {
    const metricsPort = await freePort();
    const worker = startHookgate(['serve', '--role', 'worker', '--config', configFile], {
      env: {
        DATABASE_URL: db.url,
        METRICS_PORT: String(metricsPort),
        DEMO_SECRET: SECRET,
        METRICS_LISTEN_ADDRESS: '127.0.0.2',
      },
    });
    try {
      const line = await worker.waitFor(/hookgate is serving/);
      expect(JSON.parse(line).metrics_host).toBe('127.0.0.2');
      expect((await fetch(`http://127.0.0.2:${metricsPort}/readyz`)).status).toBe(200);
      expect((await fetch(`http://127.0.0.2:${metricsPort}/metrics`)).status).toBe(200);
      await expect(fetch(`http://127.0.0.1:${metricsPort}/healthz`)).rejects.toThrow();
    } finally {
      worker.child.kill('SIGTERM');
    }
    expect(await worker.exited()).toBe(0);

    const bad = await runHookgate(['serve', '--role', 'worker', '--config', configFile], {
      env: { DATABASE_URL: db.url, DEMO_SECRET: SECRET, METRICS_LISTEN_ADDRESS: 'metrics.local' },
    });
    expect(bad.code).toBe(2);
    expect(bad.output).toContain('METRICS_LISTEN_ADDRESS="metrics.local" is not an IP address');
  });
});
