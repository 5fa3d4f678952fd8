import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import type pg from 'pg';
import type { PgBoss } from 'pg-boss';
import { stringify } from 'yaml';
import { parseConfig } from '../../services/core/config/load.ts';
import type { Config } from '../../services/core/config/schema.ts';
import { createPool } from '../../services/core/db/pool.ts';
import { type Claim, claimBatch } from '../../services/core/inbox/claim.ts';
import { createLogger } from '../../services/core/logging.ts';
import { createBoss } from '../../services/core/queue/boss.ts';
import { applyQueue } from '../../services/core/queue/names.ts';
import { ensureQueues, retryPolicyFrom } from '../../services/core/queue/queues.ts';
import { type RunningWorker, startWorker } from '../../services/worker/worker.ts';
import { reportLongWait } from './long-wait.ts';

export const REPO_ROOT = resolve(import.meta.dirname, '../..');
export const CLI = join(REPO_ROOT, 'services/cli/main.ts');

/** Short timings so retries, expiry and dead-lettering happen within seconds. */
export const FAST_WORKER = {
  batchSize: 20,
  concurrency: 2,
  pollingInterval: '100ms',
  retryLimit: 2,
  retryDelay: '1s',
  retryDelayMax: '1s',
  expireIn: '3s',
  superviseInterval: '1s',
  shutdownTimeout: '5s',
  sweepInterval: '2s',
} as const;

const SECRET = 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw';

/** The raw (pre-validation) config document, so it can also be written as YAML for processes. */
export function workerConfigDocument(
  endpoints: Record<string, Record<string, unknown>>,
  worker: Record<string, unknown> = {},
): Record<string, unknown> {
  const full: Record<string, unknown> = {};
  for (const [name, endpoint] of Object.entries(endpoints)) {
    full[name] = { provider: 'standard-webhooks', secrets: [SECRET], ...endpoint };
  }
  return {
    claim: { maxWait: '2ms' },
    database: { statementTimeout: '30s' },
    worker: { ...FAST_WORKER, ...worker },
    endpoints: full,
  };
}

export function workerConfig(
  endpoints: Record<string, Record<string, unknown>>,
  worker: Record<string, unknown> = {},
  env: Readonly<Record<string, string>> = {},
): Config {
  return parseConfig(workerConfigDocument(endpoints, worker), env);
}

export function writeConfigFile(document: Record<string, unknown>): string {
  const dir = mkdtempSync(join(tmpdir(), 'hookgate-worker-test-'));
  const file = join(dir, 'hookgate.yaml');
  writeFileSync(file, stringify(document));
  return file;
}

export interface TestEvent {
  readonly eventId: string;
  readonly eventType?: string;
  readonly entityType?: string | null;
  readonly entityId?: string | null;
  readonly version?: number | bigint | null;
  readonly body?: unknown;
}

/** Claims events through the gateway's real claim path: inbox rows and jobs, one transaction. */
export class Claimer {
  readonly pool: pg.Pool;
  readonly boss: PgBoss;
  /** As the gateway: no job carries more events than a worker applies at once. */
  readonly eventsPerJob: number;

  private constructor(pool: pg.Pool, boss: PgBoss, eventsPerJob: number) {
    this.pool = pool;
    this.boss = boss;
    this.eventsPerJob = eventsPerJob;
  }

  static async start(url: string, config: Config): Promise<Claimer> {
    const pool = createPool({
      connectionString: url,
      max: 4,
      statementTimeoutMs: 30_000,
      connectTimeoutMs: 10_000,
      applicationName: 'test-claimer',
    });
    const boss = createBoss({
      connectionString: url,
      max: 2,
      supervise: false,
      applicationName: 'test-claimer',
    });
    boss.on('error', () => {});
    await boss.start();
    await ensureQueues(boss, Object.keys(config.endpoints), retryPolicyFrom(config.worker));
    return new Claimer(pool, boss, config.worker.batchSize);
  }

  async claim(endpoint: string, events: readonly TestEvent[]): Promise<void> {
    const claims: Claim[] = events.map((e) => ({
      endpoint,
      provider: 'standard-webhooks',
      event: {
        eventId: e.eventId,
        eventType: e.eventType ?? 'thing.updated',
        entityType: e.entityType ?? null,
        entityId: e.entityId ?? null,
        entityVersion: e.version === null || e.version === undefined ? null : String(e.version),
        headers: {},
      },
      body: JSON.stringify(e.body ?? { id: e.eventId, type: e.eventType ?? 'thing.updated' }),
      traceparent: null,
    }));
    for (let i = 0; i < claims.length; i += 200) {
      const results = await claimBatch(
        this.pool,
        this.boss,
        claims.slice(i, i + 200),
        {},
        {
          eventsPerJob: this.eventsPerJob,
        },
      );
      const failed = results.find((r) => !r.ok);
      if (failed && !failed.ok) throw failed.error;
    }
  }

  async stop(): Promise<void> {
    await this.boss.stop({ graceful: false, close: true });
    await this.pool.end();
  }
}

export interface TestWorker {
  readonly boss: PgBoss;
  readonly pool: pg.Pool;
  readonly worker: RunningWorker;
  stop(): Promise<void>;
}

/** The real worker runtime in this process, supervising pg-boss like `serve --role worker`. */
export async function startTestWorker(
  url: string,
  config: Config,
  options: { configDir?: string; endpoints?: readonly string[] } = {},
): Promise<TestWorker> {
  const logger = createLogger(process.env.TEST_LOG_LEVEL ?? 'silent');
  const pool = createPool({
    connectionString: url,
    max: config.worker.poolSize ?? 10,
    statementTimeoutMs: config.database.statementTimeout,
    connectTimeoutMs: 10_000,
    applicationName: 'test-worker',
  });
  const boss = createBoss({
    connectionString: url,
    max: 4,
    supervise: true,
    superviseIntervalSeconds: Math.max(1, Math.round(config.worker.superviseInterval / 1000)),
    maintenanceIntervalSeconds: Math.round(config.worker.maintenanceInterval / 1000),
    applicationName: 'test-worker',
  });
  boss.on('error', () => {});
  await boss.start();
  await ensureQueues(boss, Object.keys(config.endpoints), retryPolicyFrom(config.worker));
  const worker = await startWorker({
    config,
    pool,
    boss,
    logger,
    configDir: options.configDir ?? process.cwd(),
    ...(options.endpoints ? { endpoints: options.endpoints } : {}),
  });
  return {
    boss,
    pool,
    worker,
    async stop() {
      await worker.stop();
      await boss.stop({ graceful: false, close: true });
      await pool.end();
    },
  };
}

/** Polls `check` until it returns a truthy value (returned) or the time is up (throws). */
export async function waitFor<T>(
  what: string,
  check: () => Promise<T | null | undefined | false>,
  timeoutMs = 60_000,
  everyMs = 100,
): Promise<T> {
  const started = Date.now();
  const deadline = started + timeoutMs;
  let last: unknown;
  for (;;) {
    try {
      const value = await check();
      if (value) {
        reportLongWait(what, Date.now() - started, timeoutMs);
        return value;
      }
    } catch (error) {
      last = error;
    }
    if (Date.now() > deadline) {
      throw new Error(`timed out waiting for ${what}${last ? ` (last error: ${String(last)})` : ''}`);
    }
    await new Promise((r) => setTimeout(r, everyMs));
  }
}

/**
 * Workers (in this process or others) whose wake-up connection has run its LISTEN on `db`: from
 * then on a claim's NOTIFY reaches them. The state a test waits for before it relies on wake-ups.
 */
export async function listeningWorkers(db: pg.Pool): Promise<number> {
  const { rows } = await db.query<{ n: number }>(
    `SELECT count(*)::int AS n FROM pg_stat_activity
      WHERE datname = current_database() AND application_name = 'hookgate-worker-listen'
        AND query ILIKE 'LISTEN %'`,
  );
  return rows[0]!.n;
}

/**
 * Jobs of an endpoint's apply queue not yet finished (created, retrying or active). With a
 * sentinel applied after it, 0 means a job that should not have run would have run by now.
 */
export async function unfinishedJobs(db: pg.Pool, endpoint: string): Promise<number> {
  const { rows } = await db.query<{ n: number }>(
    `SELECT count(*)::int AS n FROM pgboss.job WHERE name = $1 AND state < 'completed'`,
    [applyQueue(endpoint)],
  );
  return rows[0]!.n;
}

export interface InboxStatus {
  readonly event_id: string;
  readonly status: string;
  readonly attempts: number;
  readonly last_error: string | null;
}

export async function inboxRows(db: pg.Pool, endpoint: string): Promise<InboxStatus[]> {
  const result = await db.query<InboxStatus>(
    'SELECT event_id, status, attempts, last_error FROM hookgate.inbox WHERE endpoint = $1 ORDER BY event_id',
    [endpoint],
  );
  return result.rows;
}

export async function statusCounts(db: pg.Pool, endpoint: string): Promise<Record<string, number>> {
  const result = await db.query<{ status: string; n: number }>(
    'SELECT status, count(*)::int AS n FROM hookgate.inbox WHERE endpoint = $1 GROUP BY status',
    [endpoint],
  );
  return Object.fromEntries(result.rows.map((r) => [r.status, r.n]));
}

export interface WorkerProcess {
  readonly child: ChildProcess;
  readonly output: () => string;
  /** Resolves with the exit code (or signal name). */
  readonly exited: Promise<number | string>;
}

/** `hookgate serve --role worker` as a real process. */
export function spawnWorkerProcess(
  configFile: string,
  databaseUrl: string,
  env: Record<string, string> = {},
): WorkerProcess {
  const child = spawn(process.execPath, [CLI, 'serve', '--role', 'worker', '--config', configFile], {
    cwd: REPO_ROOT,
    env: {
      ...process.env,
      DATABASE_URL: databaseUrl,
      METRICS_PORT: '0',
      PORT: '0',
      LOG_LEVEL: process.env.TEST_LOG_LEVEL ?? 'warn',
      ...env,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  child.stdout?.on('data', (chunk: Buffer) => {
    out += chunk.toString();
  });
  child.stderr?.on('data', (chunk: Buffer) => {
    out += chunk.toString();
  });
  const exited = new Promise<number | string>((resolveExit) => {
    child.on('exit', (code, signal) => resolveExit(code ?? signal ?? 'unknown'));
  });
  return { child, output: () => out, exited };
}
