import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Registry } from 'prom-client';
import { stringify } from 'yaml';
import { createApplyMetrics } from '../../services/core/apply/metrics.ts';
import type { Config } from '../../services/core/config/schema.ts';
import { createPool } from '../../services/core/db/pool.ts';
import { createLogger } from '../../services/core/logging.ts';
import { createGatewayMetrics, createRegistry, registerPoolMetrics } from '../../services/core/metrics.ts';
import { startMetricsServer } from '../../services/core/metrics-server.ts';
import { createBoss } from '../../services/core/queue/boss.ts';
import { ensureQueues, outboxPolicyFrom, retryPolicyFrom } from '../../services/core/queue/queues.ts';
import { registerBacklogMetrics } from '../../services/core/read-models/backlog.ts';
import { startGateway } from '../../services/gateway/gateway.ts';
import { createRelayMetrics, startRelays } from '../../services/worker/relay.ts';
import { startWorker } from '../../services/worker/worker.ts';

/** Gateway and worker in this process on one registry, scraped over HTTP like a real pod. */
export interface ObservedHookgate {
  readonly url: string;
  readonly metricsUrl: string;
  readonly registry: Registry;
  scrape(): Promise<string>;
  stop(): Promise<void>;
}

export async function startObservedHookgate(databaseUrl: string, config: Config): Promise<ObservedHookgate> {
  const logger = createLogger(process.env.TEST_LOG_LEVEL ?? 'silent');
  const pool = createPool({
    connectionString: databaseUrl,
    max: 4,
    statementTimeoutMs: 30_000,
    connectTimeoutMs: 10_000,
    applicationName: 'test-observed-gateway',
  });
  const workerPool = createPool({
    connectionString: databaseUrl,
    max: 4,
    statementTimeoutMs: 30_000,
    connectTimeoutMs: 10_000,
    applicationName: 'test-observed-worker',
  });
  const boss = createBoss({
    connectionString: databaseUrl,
    max: 4,
    supervise: true,
    superviseIntervalSeconds: 1,
    applicationName: 'test-observed',
  });
  boss.on('error', () => {});
  await boss.start();
  await ensureQueues(
    boss,
    Object.keys(config.endpoints),
    retryPolicyFrom(config.worker),
    outboxPolicyFrom(config.relay),
  );
  const registry = createRegistry();
  registerPoolMetrics(registry, { gateway: pool, worker: workerPool });
  // No cache: the test reads the database and the metrics back to back.
  registerBacklogMetrics(registry, { db: pool, endpoints: Object.keys(config.endpoints), cacheMs: 0 });
  const applyMetrics = createApplyMetrics(registry);
  const worker = await startWorker({
    config,
    pool: workerPool,
    boss,
    logger,
    configDir: '.',
    metrics: applyMetrics,
  });
  const relays = await startRelays({
    boss,
    pool: workerPool,
    logger,
    metrics: createRelayMetrics(registry),
    pollingIntervalSeconds: 0.5,
    stopTimeoutMs: 5_000,
  });
  const gateway = await startGateway({
    config,
    pool,
    boss,
    logger,
    metrics: createGatewayMetrics(registry),
    applyMetrics,
    port: 0,
    host: '127.0.0.1',
  });
  const metrics = await startMetricsServer(registry, 0, '127.0.0.1');
  const metricsUrl = `http://127.0.0.1:${metrics.port}/metrics`;
  return {
    url: `http://127.0.0.1:${gateway.port}`,
    metricsUrl,
    registry,
    scrape: async () => (await fetch(metricsUrl)).text(),
    async stop() {
      await gateway.stop();
      await worker.stop();
      await relays.stop();
      await metrics.stop();
      await boss.stop({ graceful: false, close: true });
      await pool.end();
      await workerPool.end();
    },
  };
}

/** Parses a Prometheus text exposition into `name{labels}` → value (labels sorted by name). */
export function parseExposition(text: string): Map<string, number> {
  const samples = new Map<string, number>();
  for (const line of text.split('\n')) {
    if (line === '' || line.startsWith('#')) continue;
    const match = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(.*)\})?\s+(\S+)/.exec(line);
    if (!match) continue;
    const labels = [...(match[3] ?? '').matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g)]
      .map(([, name, value]) => `${name}="${value}"`)
      .sort();
    samples.set(`${match[1]}{${labels.join(',')}}`, Number(match[4]));
  }
  return samples;
}

/** The value of one sample, labels given in any order; 0 when the series does not exist. */
export function sample(
  samples: Map<string, number>,
  name: string,
  labels: Record<string, string> = {},
): number {
  const key = `${name}{${Object.entries(labels)
    .map(([k, v]) => `${k}="${v}"`)
    .sort()
    .join(',')}}`;
  return samples.get(key) ?? 0;
}

/** Runs a program to completion with optional stdin; resolves with its exit code and output. */
export function run(
  command: string,
  args: readonly string[],
  input?: string,
): Promise<{ code: number | null; output: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { stdio: ['pipe', 'pipe', 'pipe'] });
    let output = '';
    child.stdout.on('data', (chunk: Buffer) => {
      output += chunk.toString();
    });
    child.stderr.on('data', (chunk: Buffer) => {
      output += chunk.toString();
    });
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, output }));
    child.stdin.end(input ?? '');
  });
}

export interface PrometheusServer {
  readonly url: string;
  query(expr: string): Promise<{ metric: Record<string, string>; value: [number, string] }[]>;
  get(path: string): Promise<unknown>;
  stop(): Promise<void>;
}

/** Debian's `prometheus` on 127.0.0.1 (free port, temp dir), scraping `targets` every second. */
export async function startPrometheus(options: {
  port: number;
  targets: readonly string[];
  ruleFiles?: readonly string[];
}): Promise<PrometheusServer> {
  const dir = mkdtempSync(join(tmpdir(), 'hookgate-prometheus-'));
  const configFile = join(dir, 'prometheus.yml');
  writeFileSync(
    configFile,
    stringify({
      global: { scrape_interval: '1s', evaluation_interval: '1s', scrape_timeout: '1s' },
      rule_files: options.ruleFiles ?? [],
      scrape_configs: [{ job_name: 'hookgate', static_configs: [{ targets: options.targets }] }],
    }),
  );
  const child = spawn(
    'prometheus',
    [
      `--config.file=${configFile}`,
      `--storage.tsdb.path=${join(dir, 'data')}`,
      `--web.listen-address=127.0.0.1:${options.port}`,
      '--log.level=warn',
    ],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  );
  let output = '';
  child.stdout.on('data', (chunk: Buffer) => {
    output += chunk.toString();
  });
  child.stderr.on('data', (chunk: Buffer) => {
    output += chunk.toString();
  });
  const exited = new Promise<void>((resolve) => child.on('exit', () => resolve()));
  const url = `http://127.0.0.1:${options.port}`;
  const deadline = Date.now() + 30_000;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`prometheus exited: ${output}`);
    const ready = await fetch(`${url}/-/ready`).then(
      (res) => res.ok,
      () => false,
    );
    if (ready) break;
    if (Date.now() > deadline) throw new Error(`prometheus did not become ready: ${output}`);
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
  const get = async (path: string): Promise<unknown> => {
    const res = await fetch(`${url}${path}`);
    const body = (await res.json()) as { status: string; data: unknown; error?: string };
    if (body.status !== 'success') throw new Error(`prometheus ${path}: ${body.error}`);
    return body.data;
  };
  return {
    url,
    get,
    query: async (expr) =>
      (
        (await get(`/api/v1/query?query=${encodeURIComponent(expr)}`)) as {
          result: { metric: Record<string, string>; value: [number, string] }[];
        }
      ).result,
    async stop() {
      child.kill('SIGKILL');
      await exited;
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
