import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Registry } from 'prom-client';
import { stringify } from 'yaml';
import type { Config } from '../../services/core/config/schema.ts';
import { createLogger } from '../../services/core/logging.ts';
import { startRuntime } from '../../services/runtime/runtime.ts';

/** Gateway and worker in this process on one registry, scraped over HTTP like a real pod. */
export interface ObservedHookgate {
  readonly url: string;
  readonly metricsUrl: string;
  readonly registry: Registry;
  scrape(): Promise<string>;
  stop(): Promise<void>;
}

export async function startObservedHookgate(databaseUrl: string, config: Config): Promise<ObservedHookgate> {
  const runtime = await startRuntime({
    config,
    role: 'all',
    databaseUrl,
    databaseHost: 'the test database',
    databaseAddress: 'the test database',
    logger: createLogger(process.env.TEST_LOG_LEVEL ?? 'silent'),
    configDir: '.',
    port: 0,
    host: '127.0.0.1',
    metricsPort: 0,
    metricsHost: '127.0.0.1',
    // No cache: the test reads the database and the metrics back to back.
    backlogCacheMs: 0,
  });
  const metricsUrl = `http://127.0.0.1:${runtime.metricsPort}/metrics`;
  return {
    url: `http://127.0.0.1:${runtime.port}`,
    metricsUrl,
    registry: runtime.registry,
    scrape: async () => (await fetch(metricsUrl)).text(),
    stop: () => runtime.stop(),
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
