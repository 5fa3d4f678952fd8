// The smoke run of `make test`: hookgate's own load driver sends the full mix (unique events,
// later and concurrent duplicates, out-of-order versions, billing) at an evenly spaced rate to
// a real gateway + worker on a real PostgreSQL, then the real `hookgate verify` process checks
// that nothing was lost or doubled. Bounded: ~10 s of load, at most 45 s of drain.
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { drive } from '../../load/driver/driver.ts';
import { DEFAULT_MIX } from '../../load/lib/mix.ts';
import type { VerifyReport } from '../../services/cli/verify/checks.ts';
import { freePort } from '../../services/core/db/embedded.ts';
import { createTestDatabase, type TestDatabase } from '../support/database.ts';
import { LOAD_MIX_CONFIG, LOAD_MIX_TARGETS } from '../support/load-mix-endpoints.ts';
import { type RunningProcess, runHookgate, startHookgate } from '../support/process.ts';
import { waitFor } from '../support/worker-harness.ts';

const RATE = 150;
const SECONDS = 10;

let db: TestDatabase;
let dir: string;
let configFile: string;
const processes: RunningProcess[] = [];

beforeAll(async () => {
  db = await createTestDatabase();
  dir = mkdtempSync(join(tmpdir(), 'hookgate-smoke-'));
  configFile = join(dir, 'hookgate.yaml');
  writeFileSync(configFile, LOAD_MIX_CONFIG);
});

afterAll(async () => {
  for (const running of processes) running.child.kill('SIGKILL');
  await Promise.all(processes.map((running) => running.exited().catch(() => {})));
  await db?.drop();
  rmSync(dir, { recursive: true, force: true });
});

describe('load smoke run', { timeout: 120_000 }, () => {
  it('full mix at an even rate through gateway + worker, then hookgate verify finds nothing wrong', async () => {
    const port = await freePort();
    const env = { DATABASE_URL: db.url, METRICS_PORT: '0', LOG_LEVEL: 'warn' };
    const gateway = startHookgate(['serve', '--role', 'gateway', '--config', configFile], {
      env: { ...env, PORT: String(port) },
    });
    const worker = startHookgate(['serve', '--role', 'worker', '--config', configFile], {
      env: { ...env, PORT: '0', LOG_LEVEL: 'info' },
    });
    processes.push(gateway, worker);
    await worker.waitFor(/hookgate is serving/, 60_000);
    await waitFor(
      'gateway ready',
      async () => (await fetch(`http://127.0.0.1:${port}/readyz`).catch(() => null))?.ok === true,
      60_000,
    );

    const sentFile = join(dir, 'sent.jsonl');
    const result = await drive({
      baseUrl: `http://127.0.0.1:${port}`,
      targets: LOAD_MIX_TARGETS,
      rate: RATE,
      seconds: SECONDS,
      connections: 32,
      maxInFlight: 2_000,
      requestTimeoutMs: 10_000,
      mix: DEFAULT_MIX,
      run: { id: 'smoke', startedAt: Math.floor(Date.now() / 1000) },
      recordTo: sentFile,
    });
    // Every valid delivery acknowledged; the premise: a meaningful run with real duplicates.
    expect(result.firstFailure).toBeNull();
    expect(result).toMatchObject({ non2xx: 0, errors: 0, dropped: 0, arrivals: RATE * SECONDS });
    expect(result.acked).toBe(result.requests);
    expect(result.acked).toBeGreaterThan(1_400);
    expect(result.kinds['later-duplicate']).toBeGreaterThan(60);
    expect(result.kinds['concurrent-duplicate']).toBeGreaterThan(30);

    const records = readFileSync(sentFile, 'utf8')
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as { endpoint: string; entity?: string; version?: number });
    expect(records).toHaveLength(result.acked);
    const versions = new Map<string, number[]>();
    for (const r of records) {
      if (r.entity) versions.set(r.entity, [...(versions.get(r.entity) ?? []), r.version!]);
    }
    const outOfOrder = [...versions.values()].filter((v) => v.some((x, i) => i > 0 && x < v[i - 1]!));
    expect(outOfOrder.length).toBeGreaterThan(30);

    const endpoints = ['billing', 'things', 'gh'];
    await waitFor(
      'drained',
      async () => {
        const r = await db.pool.query<{ n: number }>(
          `SELECT count(*)::int AS n FROM hookgate.inbox WHERE status = 'pending' AND endpoint = ANY($1)`,
          [endpoints],
        );
        return r.rows[0]!.n === 0;
      },
      45_000,
    );
    // The version guard was exercised: older versions arrived after newer ones and were not applied.
    const stale = await db.pool.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM hookgate.inbox WHERE endpoint = 'things' AND status = 'stale'`,
    );
    expect(stale.rows[0]!.n).toBeGreaterThan(10);

    const verify = await runHookgate(['verify', '--sent', sentFile, '--config', configFile, '--json'], {
      env: { DATABASE_URL: db.url, LOG_LEVEL: 'warn' },
    });
    const report = JSON.parse(verify.output.trim().split('\n').at(-1)!) as VerifyReport;
    expect(report.violations).toEqual([]);
    expect(verify.code).toBe(0);
    expect(report.deliveries).toBe(result.acked);
    expect(report.deliveries - report.events).toBeGreaterThan(90);
    expect(report.payments.unique).toBeGreaterThan(100);
    expect(report.payments.booked).toBe(report.payments.unique);
    expect(report.versions.entities).toBeGreaterThan(100);

    // And the same run with one planted loss fails verify, naming the event.
    await db.pool.query(
      `DELETE FROM billing.ledger_entries WHERE id = (SELECT min(id) FROM billing.ledger_entries)`,
    );
    const planted = await runHookgate(['verify', '--sent', sentFile, '--config', configFile], {
      env: { DATABASE_URL: db.url, LOG_LEVEL: 'warn' },
    });
    expect(planted.code).toBe(1);
    expect(planted.output).toMatch(/payment_not_booked\s+billing evt_smoke_\d+/);
  });
});
