// Network faults between hookgate and PostgreSQL, made in a network namespace of the run's own
// (netns.ts): PostgreSQL 15 runs inside it, hookgate's gateways and workers outside, and the only
// way between them is the namespace's veth, where iptables drops packets (DROP, never RST).
//
// - runPartition: PostgreSQL unreachable for `outageMs` while claims and apply batches are in
//   flight (a test-only trigger holds each claim and each apply for a moment just before the
//   partition, so both are certainly mid-way when it starts). The gateway must answer 503 within
//   its bound and never 2xx what did not commit; batches cut off roll back; after healing
//   everything drains, nothing doubled.
// - runLossyLink: latency (a relay, tcp-relay.ts: this kernel has no netem) plus random packet
//   loss on the veth, under load: no 2xx without a commit, `hookgate verify` clean.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import pg from 'pg';
import { LOAD_MIX_CONFIG, LOAD_MIX_ENDPOINTS } from '../support/load-mix-endpoints.ts';
import { createNamespace, type Namespace } from '../support/netns.ts';
import { type SystemCluster, startSystemCluster } from '../support/system-postgres.ts';
import { startTcpRelay, type TcpRelay } from '../support/tcp-relay.ts';
import {
  type FaultWindow,
  type Fleet,
  faultWindow,
  prepareDatabase,
  settle,
  startFleet,
  startLoad,
  timeToAccept,
} from './fleet.ts';

/**
 * PostgreSQL's side of "nothing waits forever" (docs/kubernetes.md): a client that vanished is
 * found by keepalives within about 20 s, unacknowledged data is given up after 10 s, and a
 * backend running a statement checks every 5 s that its client is still there. Without these a
 * backend whose client is gone keeps its transaction, and its row locks, for up to two hours.
 */
export const SERVER_NETWORK_SETTINGS: Readonly<Record<string, string>> = {
  tcp_keepalives_idle: '10',
  tcp_keepalives_interval: '2',
  tcp_keepalives_count: '5',
  tcp_user_timeout: '10000',
  client_connection_check_interval: '5000',
};

/**
 * Test-only: while a row of public.slow_paths names it, each claim statement (the inbox insert)
 * or each apply (the project handler's write) sleeps once per transaction, so that the one in
 * flight when the partition starts is certainly mid-way.
 */
const INSTALL_SLOW_PATHS = `
  CREATE TABLE public.slow_paths (path text PRIMARY KEY, ms integer NOT NULL);
  CREATE FUNCTION public.slow_path() RETURNS trigger LANGUAGE plpgsql AS $$
  DECLARE
    wait integer;
  BEGIN
    SELECT ms INTO wait FROM public.slow_paths WHERE path = TG_ARGV[0];
    IF wait IS NOT NULL AND current_setting('hookgate_test.slowed', true) IS DISTINCT FROM 'yes' THEN
      PERFORM set_config('hookgate_test.slowed', 'yes', true);
      PERFORM pg_sleep(wait / 1000.0);
    END IF;
    RETURN NULL;
  END $$;
  CREATE TRIGGER slow_claim AFTER INSERT ON hookgate.inbox
    FOR EACH STATEMENT EXECUTE FUNCTION public.slow_path('claim');
  CREATE TRIGGER slow_apply AFTER INSERT OR UPDATE ON hookgate.entity_state
    FOR EACH STATEMENT EXECUTE FUNCTION public.slow_path('apply');`;
const SLOW_DOWN = 'INSERT INTO public.slow_paths (path, ms) VALUES ($1, $2)';
const SPEED_UP = 'DELETE FROM public.slow_paths';
const RETRIED = `SELECT count(*)::int AS n FROM hookgate.inbox WHERE attempts > 1 AND endpoint = ANY($1)`;
/** Claims and applies held by the trigger above right now, by the pool they came from. */
const IN_FLIGHT = `
  SELECT count(*) FILTER (WHERE application_name = 'hookgate-gateway')::int AS claims,
         count(*) FILTER (WHERE application_name = 'hookgate-worker')::int AS applies
    FROM pg_stat_activity WHERE wait_event = 'PgSleep'`;

interface Rig {
  readonly ns: Namespace;
  readonly cluster: SystemCluster;
  readonly dir: string;
  readonly configFile: string;
  cleanup(): Promise<void>;
}

async function rig(): Promise<Rig> {
  const ns = createNamespace();
  const dir = mkdtempSync(join(tmpdir(), 'hookgate-netfault-'));
  let cluster: SystemCluster | null = null;
  try {
    cluster = await startSystemCluster(15, SERVER_NETWORK_SETTINGS, { host: ns.address, netns: ns.name });
    await prepareDatabase(cluster.url);
    const client = new pg.Client({ connectionString: cluster.url });
    await client.connect();
    await client.query(INSTALL_SLOW_PATHS);
    await client.end();
    const configFile = join(dir, 'hookgate.yaml');
    writeFileSync(configFile, LOAD_MIX_CONFIG);
    const started = cluster;
    return {
      ns,
      cluster: started,
      dir,
      configFile,
      async cleanup() {
        await started.stop();
        ns.remove();
        rmSync(dir, { recursive: true, force: true });
      },
    };
  } catch (error) {
    await cluster?.stop();
    ns.remove();
    rmSync(dir, { recursive: true, force: true });
    throw error;
  }
}

async function on(url: string, text: string, values: unknown[] = []): Promise<pg.QueryResult> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return await client.query(text, values);
  } finally {
    await client.end();
  }
}

function statusesOf(
  results: readonly { statuses: Readonly<Record<string, number>> }[],
): Record<string, number> {
  const out: Record<string, number> = {};
  for (const r of results)
    for (const [status, n] of Object.entries(r.statuses)) out[status] = (out[status] ?? 0) + n;
  return out;
}

export interface PartitionOptions {
  readonly outageMs: number;
  readonly rate: number;
  readonly seconds: number;
  /** The partition starts at this fraction of the load. */
  readonly faultAt: number;
  readonly gateways: number;
  readonly workers: number;
  readonly drainTimeoutMs: number;
  readonly log: (line: string) => void;
}

export interface PartitionReport {
  readonly scenario: 'partition';
  readonly outageMs: number;
  readonly requests: number;
  readonly acknowledged: number;
  readonly statuses: Readonly<Record<string, number>>;
  /** What was in flight on the server the moment the partition began. */
  readonly inFlightAtPartition: { readonly claims: number; readonly applies: number };
  readonly fault: FaultWindow & { readonly ms: number };
  /** From the healing to the first 2xx of a delivery sent after it. */
  readonly acceptAgainMs: number | null;
  /** Events that needed more than one attempt (an apply cut off by the partition among them). */
  readonly retried: number;
  readonly lost: number;
  readonly doubled: number;
  readonly pending: number;
  readonly drainSeconds: number;
}

export async function runPartition(options: PartitionOptions): Promise<PartitionReport> {
  const r = await rig();
  let fleet: Fleet | null = null;
  try {
    fleet = await startFleet({
      url: r.cluster.url,
      configFile: r.configFile,
      gateways: options.gateways,
      workers: options.workers,
      log: options.log,
    });
    const load = startLoad({
      ports: fleet.gatewayPorts,
      rate: options.rate,
      seconds: options.seconds,
      dir: r.dir,
      runId: `np${Date.now().toString(36)}`,
    });
    await sleep(options.faultAt * options.seconds * 1000);
    // Applies first (a batch needs claimed events to start), then claims; each well inside the
    // statement timeout, so nothing but the partition can fail them.
    await on(r.cluster.url, SLOW_DOWN, ['apply', 3_000]);
    await sleep(1_200);
    await on(r.cluster.url, SLOW_DOWN, ['claim', 2_000]);
    await sleep(600);
    const inFlight = (await on(r.cluster.url, IN_FLIGHT)).rows[0] as PartitionReport['inFlightAtPartition'];
    r.ns.partition(r.cluster.port);
    const from = Date.now();
    options.log(`PostgreSQL unreachable (iptables DROP); in flight: ${JSON.stringify(inFlight)}`);
    await sleep(options.outageMs);
    r.ns.heal();
    const to = Date.now();
    options.log(`partition healed after ${to - from} ms`);
    await on(r.cluster.url, SPEED_UP);
    const done = await load.done;
    const settled = await settle({
      url: r.cluster.url,
      configFile: r.configFile,
      dir: r.dir,
      load: done,
      drainTimeoutMs: options.drainTimeoutMs,
    });
    return {
      scenario: 'partition',
      outageMs: to - from,
      requests: done.results.reduce((n, x) => n + x.requests, 0),
      acknowledged: settled.acknowledged,
      statuses: statusesOf(done.results),
      inFlightAtPartition: inFlight,
      fault: { ms: to - from, ...faultWindow(done.answers, from, to) },
      acceptAgainMs: timeToAccept(done.answers, to),
      retried: (await on(r.cluster.url, RETRIED, [LOAD_MIX_ENDPOINTS])).rows[0].n as number,
      lost: settled.lost,
      doubled: settled.doubled,
      pending: settled.pending,
      drainSeconds: settled.drainSeconds,
    };
  } finally {
    await fleet?.stop().catch((error: unknown) => options.log(`fleet stop: ${String(error)}`));
    await r.cleanup();
  }
}

export interface LossyLinkOptions {
  /** Packets dropped at random on the veth, in each direction. */
  readonly loss: number;
  /** Added to every chunk, each way (a relay in front of the namespace). */
  readonly delayMs: number;
  readonly rate: number;
  readonly seconds: number;
  readonly gateways: number;
  readonly workers: number;
  readonly drainTimeoutMs: number;
  readonly log: (line: string) => void;
}

export interface LossyLinkReport {
  readonly scenario: 'lossy-link';
  readonly lossPercent: number;
  readonly delayMs: number;
  readonly requests: number;
  readonly acknowledged: number;
  readonly statuses: Readonly<Record<string, number>>;
  readonly ackP99Ms: number;
  readonly lost: number;
  readonly doubled: number;
  readonly pending: number;
  readonly drainSeconds: number;
}

export async function runLossyLink(options: LossyLinkOptions): Promise<LossyLinkReport> {
  const r = await rig();
  let relay: TcpRelay | null = null;
  let fleet: Fleet | null = null;
  try {
    relay = await startTcpRelay({ host: r.cluster.host, port: r.cluster.port });
    const url = `postgres://postgres@127.0.0.1:${relay.port}/postgres`;
    fleet = await startFleet({
      url,
      configFile: r.configFile,
      gateways: options.gateways,
      workers: options.workers,
      log: options.log,
    });
    // The link degrades under load, as it does in production, and not while the processes start
    // (their start-up and the checks after the run are not what this shows, and each lost packet
    // costs them a retransmission timeout).
    relay.setDelay(options.delayMs);
    r.ns.loss(options.loss);
    options.log(`link degraded: ${options.delayMs} ms each way, ${options.loss * 100} % of packets dropped`);
    const done = await startLoad({
      ports: fleet.gatewayPorts,
      rate: options.rate,
      seconds: options.seconds,
      dir: r.dir,
      runId: `nl${Date.now().toString(36)}`,
    }).done;
    r.ns.heal();
    relay.setDelay(0);
    options.log('link healed after the load');
    const settled = await settle({
      url,
      configFile: r.configFile,
      dir: r.dir,
      load: done,
      drainTimeoutMs: options.drainTimeoutMs,
    });
    return {
      scenario: 'lossy-link',
      lossPercent: options.loss * 100,
      delayMs: options.delayMs,
      requests: done.results.reduce((n, x) => n + x.requests, 0),
      acknowledged: settled.acknowledged,
      statuses: statusesOf(done.results),
      ackP99Ms: Math.max(...done.results.map((x) => x.ackP99Ms)),
      lost: settled.lost,
      doubled: settled.doubled,
      pending: settled.pending,
      drainSeconds: settled.drainSeconds,
    };
  } finally {
    await fleet?.stop().catch((error: unknown) => options.log(`fleet stop: ${String(error)}`));
    await relay?.stop();
    await r.cleanup();
  }
}
