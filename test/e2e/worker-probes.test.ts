import pg from 'pg';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { freePort } from '../../services/core/db/embedded.ts';
import { createTestDatabase, type TestDatabase } from '../support/database.ts';
import { startHookgate } from '../support/process.ts';
import { workerConfigDocument, writeConfigFile } from '../support/worker-harness.ts';

// `serve --role worker` has no webhook port; Kubernetes probes it on the metrics listener.
let db: TestDatabase;

beforeAll(async () => {
  db = await createTestDatabase();
});

afterAll(async () => {
  await db?.drop();
});

describe('worker probes on the metrics port', () => {
  it('answers /healthz and /readyz with 200 while running, and /readyz 503 once the database is gone', async () => {
    const configFile = writeConfigFile(workerConfigDocument({ demo: { handler: 'record' } }));
    const metricsPort = await freePort();
    const admin = new pg.Client({ connectionString: inject('adminDatabaseUrl') });
    await admin.connect();
    const worker = startHookgate(['serve', '--role', 'worker', '--config', configFile], {
      env: { DATABASE_URL: db.url, METRICS_PORT: String(metricsPort) },
    });
    try {
      await worker.waitFor(/hookgate is serving/);
      const base = `http://127.0.0.1:${metricsPort}`;
      expect((await fetch(`${base}/healthz`)).status).toBe(200);
      const ready = await fetch(`${base}/readyz`);
      expect(ready.status).toBe(200);
      expect(await ready.json()).toEqual({ status: 'ready' });
      expect((await fetch(`${base}/metrics`)).status).toBe(200);

      // Close the database to new sessions and end the worker's: readiness must say so.
      await admin.query(`ALTER DATABASE ${db.name} WITH ALLOW_CONNECTIONS false`);
      await admin.query(`SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1`, [
        db.name,
      ]);
      let status = 0;
      for (let attempt = 0; attempt < 40 && status !== 503; attempt += 1) {
        status = (await fetch(`${base}/readyz`)).status;
        if (status !== 503) await new Promise((resolve) => setTimeout(resolve, 250));
      }
      expect(status).toBe(503);
      expect((await fetch(`${base}/healthz`)).status).toBe(200);
    } finally {
      await admin.query(`ALTER DATABASE ${db.name} WITH ALLOW_CONNECTIONS true`).catch(() => {});
      await admin.end();
      worker.child.kill('SIGKILL');
      await worker.exited().catch(() => {});
    }
  });

  it('answers /readyz 503 with the reason while the database lacks a migration of this version', async () => {
    const configFile = writeConfigFile(workerConfigDocument({ demo: { handler: 'record' } }));
    const metricsPort = await freePort();
    const worker = startHookgate(['serve', '--role', 'worker', '--config', configFile], {
      env: { DATABASE_URL: db.url, METRICS_PORT: String(metricsPort) },
    });
    const latest = await db.pool.query<{ version: number; name: string }>(
      'SELECT version, name FROM hookgate.schema_migrations ORDER BY version DESC LIMIT 1',
    );
    const { version, name } = latest.rows[0]!;
    try {
      await worker.waitFor(/hookgate is serving/);
      // As a rollback of the database would leave it, before the pod is first probed.
      await db.pool.query('DELETE FROM hookgate.schema_migrations WHERE version = $1', [version]);
      const base = `http://127.0.0.1:${metricsPort}`;
      const notReady = await fetch(`${base}/readyz`);
      expect(notReady.status).toBe(503);
      const body = (await notReady.json()) as { status: string; reason: string };
      expect(body.status).toBe('not_ready');
      expect(body.reason).toContain(String(version).padStart(4, '0'));
      await db.pool.query('INSERT INTO hookgate.schema_migrations (version, name) VALUES ($1, $2)', [
        version,
        name,
      ]);
      expect((await fetch(`${base}/readyz`)).status).toBe(200);
    } finally {
      worker.child.kill('SIGKILL');
      await worker.exited().catch(() => {});
    }
  });
});
