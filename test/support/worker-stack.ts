import { writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { afterAll, afterEach, beforeAll } from 'vitest';
import { parseConfig } from '../../services/core/config/load.ts';
import { createTestDatabase, type TestDatabase } from './database.ts';
import { installEffects } from './worker-effects.ts';
import {
  Claimer,
  spawnWorkerProcess,
  type WorkerProcess,
  workerConfigDocument,
  writeConfigFile,
} from './worker-harness.ts';

type Endpoints = Record<string, Record<string, unknown>>;

export interface WorkerStackOptions {
  /** The endpoints, or a function read once the setup hook ran (for URLs of servers it started). */
  readonly endpoints: Endpoints | (() => Endpoints);
  /** The config's worker section, over the harness's fast timings. */
  readonly worker?: Record<string, unknown>;
  /** Top-level config sections beside endpoints and worker (relay, claim, …). */
  readonly extra?: Record<string, unknown>;
  /** Installs the worker-effects tables (public.effects, fail_control, …). */
  readonly effects?: boolean;
  /** Files the config names (a `module:` handler), written beside it: name → contents. */
  readonly besideConfig?: Record<string, string>;
  /** Runs on the fresh database before the claimer starts and the config is written. */
  readonly setup?: (db: TestDatabase) => Promise<void>;
  /** Worker processes spawned once the stack is up. */
  readonly workers?: number;
  /** When the stack's worker processes are stopped: after each test, or once after all of them. */
  readonly stopWorkers?: 'afterEach' | 'afterAll';
  /** How they are stopped: SIGTERM waits for their graceful shutdown; SIGKILL does not. */
  readonly stopSignal?: 'SIGTERM' | 'SIGKILL';
}

/** What an e2e file shares: a database, the gateway's claim path, a config file, worker processes. */
export interface WorkerStack {
  readonly db: TestDatabase;
  readonly claimer: Claimer;
  readonly configFile: string;
  /** True once the teardown has begun: a supervisor that restarts dead workers stops then. */
  readonly tearingDown: boolean;
  /** The worker processes still running, oldest first. */
  readonly workers: readonly WorkerProcess[];
  /** A worker process (on the stack's config unless another is given), stopped by the stack. */
  spawnWorker(options?: { env?: Record<string, string>; configFile?: string }): WorkerProcess;
  /** SIGKILLs a worker and waits for it to be gone. */
  kill(worker: WorkerProcess): Promise<void>;
  /** Something else to close when the stack is torn down (a fake downstream, a client), newest first. */
  defer(close: () => Promise<unknown> | unknown): void;
}

function alive(worker: WorkerProcess): boolean {
  return worker.child.exitCode === null && worker.child.signalCode === null;
}

/**
 * Registers the beforeAll/afterAll hooks that every worker e2e file wrote out by hand: a migrated
 * database, the gateway's real claim path (Claimer), the config as YAML for `serve --role worker`
 * processes, and the teardown that leaves no process or database behind even when a test failed.
 */
export function useWorkerStack(options: WorkerStackOptions): WorkerStack {
  let db: TestDatabase | undefined;
  let claimer: Claimer | undefined;
  let configFile: string | undefined;
  const running: WorkerProcess[] = [];
  let tearingDown = false;
  const deferred: Array<() => Promise<unknown> | unknown> = [];
  const signal = options.stopSignal ?? 'SIGTERM';

  const ready = <T>(value: T | undefined, name: string): T => {
    if (value === undefined) throw new Error(`the worker stack's ${name} is read before its beforeAll ran`);
    return value;
  };

  const stopAll = async () => {
    const workers = running.splice(0);
    for (const worker of workers) if (alive(worker)) worker.child.kill(signal);
    await Promise.all(workers.map((worker) => worker.exited));
  };

  const stack: WorkerStack = {
    get db() {
      return ready(db, 'database');
    },
    get claimer() {
      return ready(claimer, 'claimer');
    },
    get configFile() {
      return ready(configFile, 'config file');
    },
    get tearingDown() {
      return tearingDown;
    },
    get workers() {
      return running.filter(alive);
    },
    spawnWorker({ env = {}, configFile: file = stack.configFile } = {}) {
      const worker = spawnWorkerProcess(file, stack.db.url, env);
      running.push(worker);
      return worker;
    },
    async kill(worker) {
      if (alive(worker)) worker.child.kill('SIGKILL');
      await worker.exited;
    },
    defer(close) {
      deferred.push(close);
    },
  };

  beforeAll(async () => {
    db = await createTestDatabase();
    if (options.effects) await installEffects(db.pool);
    await options.setup?.(db);
    const endpoints = typeof options.endpoints === 'function' ? options.endpoints() : options.endpoints;
    const document = { ...workerConfigDocument(endpoints, options.worker), ...options.extra };
    configFile = writeConfigFile(document);
    for (const [name, contents] of Object.entries(options.besideConfig ?? {}))
      writeFileSync(join(dirname(configFile), name), contents);
    claimer = await Claimer.start(db.url, parseConfig(document, {}));
    for (let i = 0; i < (options.workers ?? 0); i++) stack.spawnWorker();
  });

  if (options.stopWorkers === 'afterEach') afterEach(stopAll);

  afterAll(async () => {
    tearingDown = true;
    await stopAll();
    for (const close of deferred.reverse()) await close();
    await claimer?.stop();
    await db?.drop();
  });

  return stack;
}
