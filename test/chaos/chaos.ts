// The chaos run: steady signed load with duplicates (the load driver's mix) through two gateway
// and two worker processes, while processes are SIGKILLed at random moments and restarted (as a
// Deployment would), and PostgreSQL itself is stopped and started once mid-run. After the drain,
// `hookgate verify` and an effect counter say whether anything acknowledged was lost or doubled.
// The run owns its PostgreSQL (embedded, in a temporary directory) so it can restart it; it never
// touches the test suite's shared server. Everything listens on 127.0.0.1 and every wait is bounded.
import { chmodSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import pg from 'pg';
import { type DriverAnswer, type DriverResult, drive } from '../../load/driver/driver.ts';
import { DEFAULT_MIX } from '../../load/lib/mix.ts';
import type { VerifyReport } from '../../services/cli/verify/checks.ts';
import { type EmbeddedDatabase, freePort, startEmbeddedPostgres } from '../../services/core/db/embedded.ts';
import { migrate } from '../../services/core/migrate/migrate.ts';
import { LOAD_MIX_CONFIG, LOAD_MIX_ENDPOINTS, LOAD_MIX_TARGETS } from '../support/load-mix-endpoints.ts';
import { type RunningProcess, runHookgate, startHookgate } from '../support/process.ts';
import { INSTALL_EFFECTS } from '../support/worker-effects.ts';

export interface ChaosOptions {
  /** Seconds of load (kills happen only while it runs); the least, with minKills. */
  readonly loadSeconds: number;
  /**
   * The load goes on past loadSeconds until each role has been killed this often and the outage
   * is over, so that a busy machine (processes slow to come back, fewer kills in the time) makes
   * the run longer instead of failing its premise; at most maxLoadSeconds.
   */
  readonly minKills?: { readonly gateway: number; readonly worker: number };
  readonly maxLoadSeconds?: number;
  /**
   * The outage lasts at least outageMs and until this many requests sent during it have been
   * answered (what the run shows is how serving processes answer meanwhile); at most a minute.
   */
  readonly outageAnswers?: number;
  /** Arrivals per second over both gateways. */
  readonly rate: number;
  /** Milliseconds between kills, drawn uniformly from [min, max]. */
  readonly killEveryMs: readonly [number, number];
  /** PostgreSQL is stopped at this fraction of the load, for outageMs. */
  readonly outageAt: number;
  readonly outageMs: number;
  /** Longest wait for the backlog to drain after the load. */
  readonly drainTimeoutMs: number;
  readonly seed?: number;
  readonly log?: (line: string) => void;
}

export interface ChaosReport {
  readonly seed: number;
  readonly kills: { readonly gateway: number; readonly worker: number };
  readonly requests: number;
  /** Deliveries acknowledged with a 2xx (each must be applied exactly once). */
  readonly deliveries: number;
  readonly statuses: Readonly<Record<string, number>>;
  /** Requests without an HTTP answer (their gateway was killed or down). */
  readonly unanswered: number;
  readonly outage: {
    readonly ms: number;
    /** Requests sent after PostgreSQL stopped and answered before it was started again. */
    readonly answered: number;
    readonly statuses: Readonly<Record<string, number>>;
  };
  readonly drainSeconds: number;
  /** Acknowledged events not settled once (verify's violations). */
  readonly lost: number;
  /** Events whose business write committed more than once. */
  readonly doubled: number;
  readonly pending: number;
  /** Events that needed more than one attempt (a kill or the outage interrupted one). */
  readonly retried: number;
  readonly verify: VerifyReport;
}

/** A small seeded generator, so a failing run can be repeated with its seed. */
function random(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4_294_967_296;
  };
}

export type Role = 'gateway' | 'worker';

/** One hookgate process that is started again whenever it ends, as a Deployment's pod would be. */
export class Supervised {
  current: RunningProcess | null = null;
  serving = false;
  #stopped = false;
  readonly #exits: Promise<void>[] = [];
  /** Set when an incarnation printed a configured secret (startHookgate checks every output). */
  #leak: unknown = null;

  readonly role: Role;
  readonly name: string;
  readonly #args: readonly string[];
  readonly #env: Record<string, string>;
  readonly #log: (line: string) => void;

  constructor(
    role: Role,
    name: string,
    args: readonly string[],
    env: Record<string, string>,
    log: (line: string) => void,
  ) {
    this.role = role;
    this.name = name;
    this.#args = args;
    this.#env = env;
    this.#log = log;
  }

  start(): void {
    if (this.#stopped) return;
    const proc = startHookgate(this.#args, { env: this.#env });
    this.current = proc;
    this.serving = false;
    proc.waitFor(/hookgate is serving/, 120_000).then(
      () => {
        if (this.current === proc) this.serving = true;
      },
      () => {},
    );
    const exit = proc.exited().then(
      (code) => {
        if (this.current === proc) this.serving = false;
        if (this.#stopped) return;
        if (code !== 'SIGKILL') {
          const tail = proc.output().trim().split('\n').slice(-3).join('\n  ');
          this.#log(`${this.name} exited (${code}); restarting. Its last lines:\n  ${tail}`);
        }
        // Restarted after a pause, as a kubelet would (without its growing back-off).
        setTimeout(() => this.start(), 500);
      },
      (error: unknown) => {
        this.#leak = error;
      },
    );
    this.#exits.push(exit);
  }

  kill(): void {
    this.current?.child.kill('SIGKILL');
  }

  async stop(): Promise<void> {
    this.#stopped = true;
    const proc = this.current;
    if (proc && proc.child.exitCode === null && proc.child.signalCode === null) {
      proc.child.kill('SIGTERM');
      const timer = setTimeout(() => proc.child.kill('SIGKILL'), 20_000);
      await proc.exited().catch(() => {});
      clearTimeout(timer);
    }
    await Promise.all(this.#exits);
    if (this.#leak) throw this.#leak;
  }
}

async function waitUntil(what: string, check: () => Promise<boolean>, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (await check().catch(() => false)) return;
    if (Date.now() > deadline) throw new Error(`chaos: timed out waiting for ${what}`);
    await sleep(200);
  }
}

function tally(answers: readonly DriverAnswer[]): Record<string, number> {
  const out: Record<string, number> = {};
  for (const a of answers) {
    const key = a.status === null ? 'none' : String(a.status);
    out[key] = (out[key] ?? 0) + 1;
  }
  return out;
}

export async function runChaos(options: ChaosOptions): Promise<ChaosReport> {
  const seed = options.seed ?? Math.floor(Math.random() * 2 ** 31);
  const rand = random(seed);
  const log = options.log ?? (() => {});
  // First, so that a run that fails half-way can still be repeated.
  log(`chaos seed ${seed} (CHAOS_SEED=${seed} repeats its kill schedule)`);
  const dir = mkdtempSync(join(tmpdir(), 'hookgate-chaos-'));
  // Run as root, PostgreSQL drops to the `postgres` user, which must be able to enter it.
  chmodSync(dir, 0o755);
  const pgPort = await freePort();
  let database: EmbeddedDatabase | null = await startEmbeddedPostgres(join(dir, 'db'), { port: pgPort });
  const url = database.url;
  const processes: Supervised[] = [];
  const admin = new pg.Pool({ connectionString: url, max: 2 });
  let result: ChaosReport | undefined;
  let leaked: unknown = null;
  admin.on('error', () => {});
  try {
    const client = new pg.Client({ connectionString: url });
    await client.connect();
    await migrate(client, url);
    // Test-only effect counter on the project handler's business write.
    await client.query(INSTALL_EFFECTS);
    await client.end();

    const configFile = join(dir, 'hookgate.yaml');
    // The shipped worker timings (heartbeat 10 s, supervision 5 s, expireIn 2 min).
    writeFileSync(configFile, LOAD_MIX_CONFIG);
    // info: "hookgate is serving" is how a restarted process is known to be up.
    const env = { DATABASE_URL: url, METRICS_PORT: '0', LOG_LEVEL: 'info' };
    const gatewayPorts = [await freePort(), await freePort()];
    gatewayPorts.forEach((port, i) => {
      processes.push(
        new Supervised(
          'gateway',
          `gateway-${i}`,
          ['serve', '--role', 'gateway', '--config', configFile],
          { ...env, PORT: String(port) },
          log,
        ),
      );
    });
    for (let i = 0; i < 2; i += 1) {
      processes.push(
        new Supervised(
          'worker',
          `worker-${i}`,
          ['serve', '--role', 'worker', '--config', configFile],
          { ...env, PORT: '0' },
          log,
        ),
      );
    }
    for (const p of processes) p.start();
    await waitUntil('every process serving', async () => processes.every((p) => p.serving), 120_000);

    const answers: DriverAnswer[] = [];
    const stopLoad = new AbortController();
    const files = gatewayPorts.map((_, i) => join(dir, `sent-${i}.jsonl`));
    const startedAt = Math.floor(Date.now() / 1000);
    const load = Promise.all(
      gatewayPorts.map(
        (port, i): Promise<DriverResult> =>
          drive({
            baseUrl: `http://127.0.0.1:${port}`,
            targets: LOAD_MIX_TARGETS,
            rate: options.rate / gatewayPorts.length,
            seconds: Math.max(options.loadSeconds, options.maxLoadSeconds ?? 0),
            stop: stopLoad.signal,
            connections: 16,
            maxInFlight: 2_000,
            requestTimeoutMs: 15_000,
            mix: DEFAULT_MIX,
            run: { id: `chaos${seed.toString(36)}g${i}`, startedAt },
            recordTo: files[i]!,
            onAnswer: (answer) => answers.push(answer),
          }),
      ),
    );

    const kills = { gateway: 0, worker: 0 };
    let loadDone = false;
    void load.finally(() => {
      loadDone = true;
    });
    const loadStarted = Date.now();
    const outageAt = loadStarted + options.outageAt * options.loadSeconds * 1000;
    let outage: { from: number; to: number } | null = null;
    const restartDatabase = async (): Promise<void> => {
      await database!.stop();
      database = null;
      const from = Date.now();
      log(`PostgreSQL stopped`);
      await sleep(options.outageMs);
      const wanted = options.outageAnswers ?? 0;
      const answeredSince = () => answers.filter((a) => a.sentAt >= from && a.status !== null).length;
      const bound = Date.now() + 60_000;
      while (answeredSince() < wanted && Date.now() < bound) await sleep(100);
      const to = Date.now();
      outage = { from, to };
      database = await startEmbeddedPostgres(join(dir, 'db'), { port: pgPort });
      log(`PostgreSQL started again after ${((Date.now() - from) / 1000).toFixed(1)} s`);
    };
    let outageDone = false;
    while (!loadDone) {
      const [min, max] = options.killEveryMs;
      const wait = min + rand() * (max - min);
      const until = Date.now() + wait;
      while (!loadDone && Date.now() < until) {
        if (!outageDone && Date.now() >= outageAt) {
          // Kills pause around the outage, and it starts with every process up: what is tested
          // is how serving processes answer while the database is gone (a process started
          // during the outage refuses to start, and is restarted until it can).
          outageDone = true;
          await waitUntil(
            'every process serving before the outage',
            async () => processes.every((p) => p.serving),
            60_000,
          );
          await restartDatabase();
          break;
        }
        await sleep(Math.min(100, until - Date.now()));
      }
      if (loadDone) break;
      const minKills = options.minKills ?? { gateway: 0, worker: 0 };
      if (
        Date.now() - loadStarted >= options.loadSeconds * 1000 &&
        outageDone &&
        kills.gateway >= minKills.gateway &&
        kills.worker >= minKills.worker
      ) {
        // Enough seen: no more arrivals; kills go on while the last requests are answered.
        stopLoad.abort();
      }
      // Whichever role has been hit less (ties at random), then one of its serving processes.
      const role: Role =
        kills.gateway === kills.worker
          ? rand() < 0.5
            ? 'gateway'
            : 'worker'
          : kills.gateway < kills.worker
            ? 'gateway'
            : 'worker';
      const candidates = processes.filter((p) => p.role === role && p.serving);
      const victim = candidates[Math.floor(rand() * candidates.length)];
      if (!victim) continue;
      victim.kill();
      kills[role] += 1;
      log(`SIGKILL ${victim.name} at +${((Date.now() - loadStarted) / 1000).toFixed(1)} s`);
    }
    const results = await load;
    if (!outageDone) throw new Error('chaos: the load ended before the database outage was due');
    if (!database) throw new Error('chaos: PostgreSQL is not running after the load');

    // Drain: every process back, then nothing pending.
    const drainStarted = Date.now();
    await waitUntil('every process serving again', async () => processes.every((p) => p.serving), 60_000);
    const pendingCount = async (): Promise<number> => {
      const r = await admin.query<{ n: number }>(
        `SELECT count(*)::int AS n FROM hookgate.inbox WHERE status = 'pending' AND endpoint = ANY($1)`,
        [LOAD_MIX_ENDPOINTS],
      );
      return r.rows[0]!.n;
    };
    await waitUntil('the backlog to drain', async () => (await pendingCount()) === 0, options.drainTimeoutMs);
    const drainSeconds = (Date.now() - drainStarted) / 1000;

    const sentFile = join(dir, 'sent.jsonl');
    writeFileSync(sentFile, files.map((f) => readFileSync(f, 'utf8')).join(''));
    const verify = await runHookgate(['verify', '--sent', sentFile, '--config', configFile, '--json'], {
      env: { DATABASE_URL: url, LOG_LEVEL: 'warn' },
    });
    const report = JSON.parse(verify.output.trim().split('\n').at(-1)!) as VerifyReport;
    const doubled = await admin.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM (SELECT event_id FROM public.effects GROUP BY endpoint, event_id HAVING count(*) > 1) d`,
    );
    const window = outage as { from: number; to: number } | null;
    const inOutage = window
      ? answers.filter((a) => a.sentAt >= window.from && a.answeredAt <= window.to && a.status !== null)
      : [];
    const statuses: Record<string, number> = {};
    for (const r of results)
      for (const [status, n] of Object.entries(r.statuses)) statuses[status] = (statuses[status] ?? 0) + n;
    result = {
      seed,
      kills,
      requests: results.reduce((n, r) => n + r.requests, 0),
      deliveries: results.reduce((n, r) => n + r.acked, 0),
      statuses,
      unanswered: results.reduce((n, r) => n + r.errors, 0),
      outage: {
        ms: window ? window.to - window.from : 0,
        answered: inOutage.length,
        statuses: tally(inOutage),
      },
      drainSeconds,
      lost: report.violationCount,
      doubled: doubled.rows[0]!.n,
      pending: await pendingCount(),
      retried: (
        await admin.query<{ n: number }>(
          'SELECT count(*)::int AS n FROM hookgate.inbox WHERE attempts > 1 AND endpoint = ANY($1)',
          [LOAD_MIX_ENDPOINTS],
        )
      ).rows[0]!.n,
      verify: report,
    };
  } finally {
    const stopped = await Promise.allSettled(processes.map((p) => p.stop()));
    await admin.end().catch(() => {});
    await database?.stop();
    rmSync(dir, { recursive: true, force: true });
    const failed = stopped.find((s) => s.status === 'rejected');
    if (failed?.status === 'rejected') leaked = failed.reason;
  }
  if (leaked) throw leaked;
  return result;
}

/** One line for people: kills, deliveries, lost, doubled. */
export function summary(report: ChaosReport): string {
  const outage = Object.entries(report.outage.statuses)
    .map(([status, n]) => `${n}×${status}`)
    .join(', ');
  return [
    `chaos (seed ${report.seed}): kills ${report.kills.gateway + report.kills.worker} (gateway ${report.kills.gateway}, worker ${report.kills.worker}), PostgreSQL restarted once (${report.outage.ms} ms down)`,
    `deliveries ${report.deliveries} acknowledged of ${report.requests} requests (${report.unanswered} unanswered: gateway killed or down); answers ${JSON.stringify(report.statuses)}`,
    `during the outage: ${report.outage.answered} answered (${outage || 'none'})`,
    `${report.retried} events needed more than one attempt; drained in ${report.drainSeconds.toFixed(1)} s after the load; lost ${report.lost}, doubled ${report.doubled}, pending ${report.pending}`,
  ].join('\n');
}
