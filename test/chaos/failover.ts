// A failover under load: a PostgreSQL 15 primary and a streaming standby made by the run
// (pg_basebackup), hookgate's gateways and workers connected through PgBouncer (session mode),
// signed load with duplicates; then the primary's host dies (SIGKILL to every process of the
// cluster), the standby is promoted and PgBouncer is pointed at it (RELOAD), as a failover
// manager would. After the drain, `hookgate verify` runs on the promoted standby: every delivery
// acknowledged before, during and after the failover must be there, applied once.
//
// The standby streams through a relay (tcp-relay.ts) that can stall the replication link: with
// `stallBeforeCrashMs`, the standby stops receiving WAL that long before the crash — a slow or
// congested link, the case asynchronous replication cannot cover. With synchronous replication
// the primary cannot confirm a commit the standby has not flushed, so those deliveries are
// answered 503 instead of 200.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import pg from 'pg';
import { percentile } from '../../load/driver/driver.ts';
import { LOAD_MIX_CONFIG } from '../support/load-mix-endpoints.ts';
import { startPgBouncer, type TestPgBouncer } from '../support/pgbouncer.ts';
import { type SystemCluster, startStandby, startSystemCluster } from '../support/system-postgres.ts';
import { startTcpRelay, type TcpRelay } from '../support/tcp-relay.ts';
import {
  type FaultWindow,
  type Fleet,
  faultWindow,
  fleetConnections,
  prepareDatabase,
  settle,
  startFleet,
  startLoad,
  timeToAccept,
  waitUntil,
} from './fleet.ts';

export interface FailoverOptions {
  readonly synchronous: boolean;
  /** The replication link is stalled this long before the crash (0: a healthy link). */
  readonly stallBeforeCrashMs: number;
  /** Between the crash and the promotion: the failover manager noticing. */
  readonly detectMs: number;
  readonly rate: number;
  readonly seconds: number;
  /** The crash comes at this fraction of the load. */
  readonly crashAt: number;
  readonly gateways: number;
  readonly workers: number;
  readonly drainTimeoutMs: number;
  readonly log: (line: string) => void;
}

export interface FailoverReport {
  readonly scenario: string;
  readonly replication: 'synchronous' | 'asynchronous';
  readonly stallBeforeCrashMs: number;
  readonly requests: number;
  readonly acknowledged: number;
  readonly statuses: Readonly<Record<string, number>>;
  /** Acknowledgement time before the fault (what the replication mode costs each delivery), ms. */
  readonly ackBeforeFault: { readonly p50: number; readonly p99: number };
  /** From the replication stall (or the crash) until PgBouncer pointed at the promoted standby. */
  readonly fault: FaultWindow & { readonly ms: number };
  /** pg_ctl promote, until the standby accepted writes. */
  readonly promotionMs: number;
  /** From the promotion to the first 2xx of a delivery sent after it. */
  readonly acceptAgainMs: number | null;
  readonly lost: number;
  readonly doubled: number;
  readonly pending: number;
  readonly drainSeconds: number;
  /** Up to ten of the acknowledged events the promoted standby does not have. */
  readonly lostExamples: readonly string[];
}

const REPLICATION = 'SELECT state, sync_state FROM pg_stat_replication WHERE application_name = $1';
const STANDBY = 'standby1';

async function query<T extends pg.QueryResultRow>(
  url: string,
  text: string,
  values: unknown[] = [],
): Promise<T[]> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return (await client.query<T>(text, values)).rows;
  } finally {
    await client.end();
  }
}

export async function runFailover(options: FailoverOptions): Promise<FailoverReport> {
  const dir = mkdtempSync(join(tmpdir(), 'hookgate-failover-'));
  const log = options.log;
  let primary: SystemCluster | null = null;
  let standby: SystemCluster | null = null;
  let relay: TcpRelay | null = null;
  let bouncer: TestPgBouncer | null = null;
  let fleet: Fleet | null = null;
  try {
    primary = await startSystemCluster(15);
    relay = await startTcpRelay({ host: primary.host, port: primary.port });
    standby = await startStandby(primary, { name: STANDBY, via: { host: '127.0.0.1', port: relay.port } });
    const primaryUrl = primary.url;
    await waitUntil(
      'the standby streaming',
      async () =>
        (await query<{ state: string }>(primaryUrl, REPLICATION, [STANDBY]))[0]?.state === 'streaming',
      30_000,
    );
    await prepareDatabase(primaryUrl);
    if (options.synchronous) {
      // synchronous_commit is on by default: a COMMIT returns once the standby has flushed it.
      await query(primaryUrl, `ALTER SYSTEM SET synchronous_standby_names = 'FIRST 1 (${STANDBY})'`);
      await query(primaryUrl, 'SELECT pg_reload_conf()');
      await waitUntil(
        'the standby synchronous',
        async () =>
          (await query<{ sync_state: string }>(primaryUrl, REPLICATION, [STANDBY]))[0]?.sync_state === 'sync',
        30_000,
      );
      const [setting] = await query<{ synchronous_commit: string }>(primaryUrl, 'SHOW synchronous_commit');
      if (setting?.synchronous_commit !== 'on') throw new Error('synchronous_commit is not on');
    }
    const configFile = join(dir, 'hookgate.yaml');
    writeFileSync(configFile, LOAD_MIX_CONFIG);
    bouncer = await startPgBouncer(primaryUrl, {
      mode: 'session',
      poolSize: fleetConnections(configFile, options.gateways, options.workers),
    });
    const url = bouncer.url('postgres');
    fleet = await startFleet({ url, configFile, gateways: options.gateways, workers: options.workers, log });

    const load = startLoad({
      ports: fleet.gatewayPorts,
      rate: options.rate,
      seconds: options.seconds,
      dir,
      runId: `fo${options.synchronous ? 's' : 'a'}${Date.now().toString(36)}`,
    });
    await sleep(options.crashAt * options.seconds * 1000);
    const faultFrom = Date.now();
    if (options.stallBeforeCrashMs > 0) {
      relay.stall();
      log(`replication link stalled`);
      await sleep(options.stallBeforeCrashMs);
    }
    primary.crash();
    log(`primary crashed (SIGKILL to every process)`);
    await sleep(options.detectMs);
    const promoteStarted = Date.now();
    await standby.promote();
    const promoted = Date.now();
    log(`standby promoted in ${promoted - promoteStarted} ms`);
    await bouncer.repoint(standby.url);
    const faultTo = Date.now();
    log(`PgBouncer points at the promoted standby (${faultTo - promoted} ms after the promotion)`);
    const done = await load.done;
    await relay.stop();
    relay = null;

    await waitUntil('every process serving', async () => fleet!.allServing(), 60_000);
    const settled = await settle({
      url: standby.url,
      configFile,
      dir,
      load: done,
      drainTimeoutMs: options.drainTimeoutMs,
    });
    const statuses: Record<string, number> = {};
    for (const r of done.results)
      for (const [status, n] of Object.entries(r.statuses)) statuses[status] = (statuses[status] ?? 0) + n;
    return {
      scenario: `failover-${options.synchronous ? 'sync' : 'async'}${options.stallBeforeCrashMs ? '-stalled-link' : ''}`,
      replication: options.synchronous ? 'synchronous' : 'asynchronous',
      stallBeforeCrashMs: options.stallBeforeCrashMs,
      requests: done.results.reduce((n, r) => n + r.requests, 0),
      acknowledged: settled.acknowledged,
      statuses,
      ackBeforeFault: (() => {
        const acks = done.answers
          .filter((a) => a.status !== null && a.status < 300 && a.answeredAt < faultFrom)
          .map((a) => a.answeredAt - a.sentAt);
        return { p50: percentile(acks, 50), p99: percentile(acks, 99) };
      })(),
      fault: { ms: faultTo - faultFrom, ...faultWindow(done.answers, faultFrom, faultTo) },
      promotionMs: promoted - promoteStarted,
      acceptAgainMs: timeToAccept(done.answers, promoted),
      lost: settled.lost,
      doubled: settled.doubled,
      pending: settled.pending,
      drainSeconds: settled.drainSeconds,
      lostExamples: settled.verify.violations.slice(0, 10).map((v) => JSON.stringify(v)),
    };
  } finally {
    await fleet?.stop().catch((error: unknown) => log(`fleet stop: ${String(error)}`));
    await bouncer?.stop();
    await relay?.stop();
    await standby?.stop();
    await primary?.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}
