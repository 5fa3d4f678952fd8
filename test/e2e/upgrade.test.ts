// The compatibility rule (docs/releases.md), end to end: the previous release's gateways and
// workers (its own files, from its commit) serve signed load through a balancer; this tree's
// `hookgate migrate` runs under that load; each process is then replaced by this tree's, one by
// one; then rolled back to the previous release's, one by one, on the migrated schema (what
// `helm rollback` does: no migration runs); then `hookgate verify` over every acknowledged
// delivery: nothing lost, nothing applied twice.
//
// Which release is "previous" comes from release/releases (test/support/previous-release.ts).
// Before any release exists the test starts from HEAD's committed tree, and says so in its name:
// it then proves the harness and a rolling restart with a migrate under load, not compatibility
// with an older schema.
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type DriverResult, drive } from '../../load/driver/driver.ts';
import { DEFAULT_MIX } from '../../load/lib/mix.ts';
import type { VerifyReport } from '../../services/cli/verify/checks.ts';
import { freePort } from '../../services/core/db/embedded.ts';
import { type Balancer, startBalancer } from '../support/balancer.ts';
import { createTestDatabase, type TestDatabase } from '../support/database.ts';
import { LOAD_MIX_CONFIG, LOAD_MIX_ENDPOINTS, LOAD_MIX_TARGETS } from '../support/load-mix-endpoints.ts';
import { type Checkout, checkOut, previousRelease } from '../support/previous-release.ts';
import { type RunningProcess, runHookgate, startHookgate } from '../support/process.ts';
import { INSTALL_EFFECTS } from '../support/worker-effects.ts';
import { waitFor } from '../support/worker-harness.ts';

const previous = previousRelease();
/** Arrivals per second through the balancer, in rounds of ROUND_SECONDS. */
const RATE = 40;
const ROUND_SECONDS = 2;
/** Acknowledged deliveries each mix of old and new processes must take before the next step. */
const PER_STEP = 60;

let db: TestDatabase;
let dir: string;
let configFile: string;
let checkout: Checkout | undefined;
let balancer: Balancer | undefined;
const running = new Set<RunningProcess>();

interface Slot {
  readonly name: string;
  readonly role: 'gateway' | 'worker';
  process: RunningProcess;
  port: number;
  code: 'previous' | 'this';
}

beforeAll(async () => {
  db = await createTestDatabase({ migrated: false });
  dir = mkdtempSync(join(tmpdir(), 'hookgate-upgrade-'));
  configFile = join(dir, 'hookgate.yaml');
  writeFileSync(configFile, LOAD_MIX_CONFIG);
  checkout = checkOut(previous.commit);
}, 600_000);

afterAll(async () => {
  for (const process of running) process.child.kill('SIGKILL');
  await Promise.all([...running].map((process) => process.exited().catch(() => {})));
  await balancer?.stop();
  await db?.drop();
  checkout?.remove();
  rmSync(dir, { recursive: true, force: true });
});

function rootOf(code: Slot['code']): string | undefined {
  return code === 'previous' ? checkout!.root : undefined;
}

async function start(role: Slot['role'], code: Slot['code'], port: number): Promise<RunningProcess> {
  const process = startHookgate(['serve', '--role', role, '--config', configFile], {
    root: rootOf(code),
    env: { DATABASE_URL: db.url, PORT: String(port), METRICS_PORT: '0', LOG_LEVEL: 'info' },
  });
  running.add(process);
  await process.waitFor(/hookgate is serving/, 120_000);
  if (role === 'gateway') {
    await waitFor(
      'gateway ready',
      async () => (await fetch(`http://127.0.0.1:${port}/readyz`).catch(() => null))?.ok === true,
      60_000,
    );
  }
  return process;
}

/** SIGTERM, as the kubelet stops a pod: the process must drain and exit 0. */
async function stop(process: RunningProcess): Promise<void> {
  process.child.kill('SIGTERM');
  const code = await process.exited();
  running.delete(process);
  expect(code, process.output()).toBe(0);
}

describe(`upgrade from ${previous.label} to this tree, under load, then back`, { timeout: 900_000 }, () => {
  it('migrates, rolls every process forward and back one by one: 0 lost, 0 doubled', async () => {
    console.log(`upgrade test: previous ${previous.label}, node_modules ${checkout!.modules}`);
    // The previous release's install: its migrate, its processes.
    const installed = await runHookgate(['migrate'], { root: checkout!.root, env: { DATABASE_URL: db.url } });
    expect(installed.code, installed.output).toBe(0);
    await db.pool.query(INSTALL_EFFECTS);
    const slots: Slot[] = [];
    for (const [name, role] of [
      ['gateway-0', 'gateway'],
      ['gateway-1', 'gateway'],
      ['worker-0', 'worker'],
      ['worker-1', 'worker'],
    ] as const) {
      const port = await freePort();
      slots.push({ name, role, port, code: 'previous', process: await start(role, 'previous', port) });
    }
    const gateways = () => slots.filter((slot) => slot.role === 'gateway');
    balancer = await startBalancer(gateways().map((slot) => slot.port));

    // Load in short rounds until told to stop: every acknowledged delivery is recorded.
    const results: DriverResult[] = [];
    const files: string[] = [];
    let acked = 0;
    let step = 'the previous release serving';
    /** The first request not acknowledged, and during which step: fails the test at the next wait. */
    let refused: string | null = null;
    let loading = true;
    const load = (async () => {
      const startedAt = Math.floor(Date.now() / 1000);
      for (let round = 0; loading; round += 1) {
        const file = join(dir, `sent-${round}.jsonl`);
        files.push(file);
        const result = await drive({
          baseUrl: `http://127.0.0.1:${balancer!.port}`,
          targets: LOAD_MIX_TARGETS,
          rate: RATE,
          seconds: ROUND_SECONDS,
          connections: 16,
          maxInFlight: 1_000,
          requestTimeoutMs: 30_000,
          mix: DEFAULT_MIX,
          run: { id: `up${round}`, startedAt },
          recordTo: file,
        });
        results.push(result);
        acked += result.acked;
        if (refused === null && result.non2xx + result.errors > 0)
          refused = `${result.non2xx + result.errors} request(s) not acknowledged during ${step}: ${result.firstFailure}`;
      }
    })();
    /** Waits until PER_STEP more deliveries were acknowledged: traffic went through this mix of processes. */
    const traffic = async (what: string) => {
      step = what;
      const from = acked;
      const deadline = Date.now() + 120_000;
      while (acked - from < PER_STEP) {
        if (refused !== null) throw new Error(refused);
        if (Date.now() > deadline)
          throw new Error(`timed out waiting for ${PER_STEP} deliveries acknowledged: ${what}`);
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
    };

    const replace = async (slot: Slot, code: Slot['code']) => {
      if (slot.role === 'gateway')
        balancer!.setRotation(
          gateways()
            .filter((s) => s !== slot)
            .map((s) => s.port),
        );
      await stop(slot.process);
      slot.port = slot.role === 'gateway' ? await freePort() : slot.port;
      slot.process = await start(slot.role, code, slot.port);
      slot.code = code;
      if (slot.role === 'gateway') balancer!.setRotation(gateways().map((s) => s.port));
      await traffic(
        `${slot.name} replaced by ${code === 'this' ? "this tree's" : "the previous release's"} code`,
      );
    };

    try {
      await traffic('the previous release serving');
      // This tree's migration, while the previous release serves.
      step = "this tree's migration";
      const migrated = await runHookgate(['migrate'], { env: { DATABASE_URL: db.url } });
      expect(migrated.code, migrated.output).toBe(0);
      await traffic("the previous release serving on this tree's schema");
      for (const slot of slots) await replace(slot, 'this');
      // helm rollback: the previous release's processes again, on the migrated schema.
      for (const slot of slots) await replace(slot, 'previous');
    } finally {
      loading = false;
      await load;
    }

    const total = results.reduce(
      (sum, r) => ({
        requests: sum.requests + r.requests,
        non2xx: sum.non2xx + r.non2xx,
        errors: sum.errors + r.errors,
      }),
      { requests: 0, non2xx: 0, errors: 0 },
    );
    console.log(
      `upgrade test: ${acked} acknowledged of ${total.requests} requests, ${total.non2xx} non-2xx, ${total.errors} errors`,
    );
    // The premise: traffic through every step (2 × 4 replacements, the migration, the start).
    expect(acked).toBeGreaterThanOrEqual(PER_STEP * 10);
    // Every request answered 2xx: each gateway left the rotation before it drained.
    expect(total.non2xx + total.errors).toBe(0);

    await waitFor(
      'the backlog to drain',
      async () =>
        (
          await db.pool.query<{ n: number }>(
            `SELECT count(*)::int AS n FROM hookgate.inbox WHERE status = 'pending' AND endpoint = ANY($1)`,
            [LOAD_MIX_ENDPOINTS],
          )
        ).rows[0]!.n === 0,
      180_000,
    );
    const sentFile = join(dir, 'sent-all.jsonl');
    writeFileSync(sentFile, files.map((file) => readFileSync(file, 'utf8')).join(''));
    const verify = await runHookgate(['verify', '--sent', sentFile, '--config', configFile, '--json'], {
      env: { DATABASE_URL: db.url, LOG_LEVEL: 'warn' },
    });
    const report = JSON.parse(verify.output.trim().split('\n').at(-1)!) as VerifyReport;
    // 0 lost: every acknowledged delivery is in the inbox once and settled, payments booked once.
    expect(report.violations).toEqual([]);
    expect(verify.code).toBe(0);
    expect(report.deliveries).toBe(acked);
    // 0 doubled: no business write committed twice for one event.
    const doubled = await db.pool.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM (SELECT 1 FROM public.effects GROUP BY endpoint, event_id HAVING count(*) > 1) d`,
    );
    expect(doubled.rows[0]!.n).toBe(0);
    for (const slot of slots) await stop(slot.process);
  });
});
