// The short PgBouncer run of `make test` (the long one is in `make chaos`): real gateway and
// worker processes and `hookgate migrate` connect only through a stock PgBouncer 1.18 (Debian 12's,
// nothing ignored), signed load with duplicates, then `hookgate verify`. In transaction mode,
// `migrate` and `serve` refuse to start and say why.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { afterAll, describe, expect, it } from 'vitest';
import { migrate } from '../../services/core/migrate/migrate.ts';
import { runThroughPgBouncer } from '../chaos/pgbouncer-run.ts';
import { createTestDatabase, type TestDatabase } from '../support/database.ts';
import { LOAD_MIX_CONFIG } from '../support/load-mix-endpoints.ts';
import { startPgBouncer } from '../support/pgbouncer.ts';
import { runHookgate } from '../support/process.ts';

const databases: TestDatabase[] = [];

afterAll(async () => {
  await Promise.all(databases.map((db) => db.drop()));
});

async function database(): Promise<TestDatabase> {
  const db = await createTestDatabase({ migrated: false });
  databases.push(db);
  return db;
}

describe('through PgBouncer', { timeout: 180_000 }, () => {
  it('session mode: migrate, gateway, worker and verify all through it; nothing lost or doubled', async () => {
    const db = await database();
    const report = await runThroughPgBouncer({
      databaseUrl: db.url,
      mode: 'session',
      rate: 60,
      seconds: 10,
      gateways: 1,
      workers: 1,
      drainTimeoutMs: 60_000,
      log: (line) => console.log(line),
    });
    console.log(JSON.stringify(report));
    expect(report.pgbouncer).toMatch(/^PgBouncer 1\./);
    expect(report.statuses).toEqual({ '200': report.requests });
    expect(report.acknowledged).toBeGreaterThan(500);
    expect(report.lost).toBe(0);
    expect(report.doubled).toBe(0);
    expect(report.pending).toBe(0);
  });

  it('transaction mode: migrate and serve refuse at start, naming the setting to change', async () => {
    const db = await database();
    const bouncer = await startPgBouncer(db.url, { mode: 'transaction' });
    const dir = mkdtempSync(join(tmpdir(), 'hookgate-pgbouncer-tx-'));
    try {
      const url = bouncer.url(db.name);
      const refused = await runHookgate(['migrate'], { env: { DATABASE_URL: url, LOG_LEVEL: 'warn' } });
      expect(refused.code).toBe(2);
      expect(refused.output).toMatch(
        /database_pooling_unsupported: .*PgBouncer in transaction mode.*pool_mode = session/,
      );
      // Nothing was changed.
      const check = new pg.Client({ connectionString: db.url });
      await check.connect();
      expect((await check.query(`SELECT to_regclass('hookgate.inbox') AS t`)).rows[0].t).toBeNull();
      await migrate(check, db.url);
      await check.end();

      const configFile = join(dir, 'hookgate.yaml');
      writeFileSync(configFile, LOAD_MIX_CONFIG);
      for (const role of ['gateway', 'worker']) {
        const serve = await runHookgate(['serve', '--role', role, '--config', configFile], {
          env: { DATABASE_URL: url, PORT: '0', METRICS_PORT: '0', LOG_LEVEL: 'warn' },
        });
        expect(serve.code).toBe(2);
        expect(serve.output).toMatch(/database_pooling_unsupported: .*per transaction/);
      }
    } finally {
      await bouncer.stop();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
