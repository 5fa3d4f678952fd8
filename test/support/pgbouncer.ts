import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { chmodSync, chownSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import pg from 'pg';
import { freePort } from '../../services/core/db/embedded.ts';

/**
 * A PgBouncer of the tests' own (Debian's `pgbouncer`, installed by `make pgbouncer`), on a free
 * loopback port in front of a PostgreSQL the test names, with its configuration, log and pid
 * file in a temporary directory. Nothing else on the machine is touched: no system service, no
 * /etc/pgbouncer. `repoint` rewrites the upstream and reloads (SIGHUP), as an operator or a
 * failover hook would after promoting a standby.
 */
export interface TestPgBouncer {
  readonly port: number;
  readonly mode: PoolMode;
  /** The URL of `database` through PgBouncer, as the upstream URL's user. */
  url(database: string, user?: string): string;
  /** Points every database at another PostgreSQL and reloads; clients stay connected. */
  repoint(upstreamUrl: string): Promise<void>;
  /** PgBouncer's own log so far (for failure messages). */
  log(): string;
  /** The version line PgBouncer printed (`PgBouncer 1.18.0`). */
  readonly version: string;
  stop(): Promise<void>;
}

export type PoolMode = 'session' | 'transaction';

export const PGBOUNCER = '/usr/sbin/pgbouncer';

export interface PgBouncerOptions {
  readonly mode: PoolMode;
  /** Server connections per database/user pair (PgBouncer's default_pool_size). */
  readonly poolSize?: number;
  /**
   * Users PgBouncer lets in besides the upstream URL's (auth_type trust: clients give no
   * password; PgBouncer logs in to PostgreSQL with the one listed here).
   */
  readonly users?: Readonly<Record<string, string>>;
  /** Extra `[pgbouncer]` settings, written as `key = value`. */
  readonly settings?: Readonly<Record<string, string>>;
}

/** PgBouncer refuses to run as root: as root, it runs as `postgres` (made by postgresql-15). */
function runAs(): { uid: number; gid: number } | null {
  if (process.getuid?.() !== 0) return null;
  const id = (flag: string): number =>
    Number(execFileSync('id', [flag, 'postgres'], { encoding: 'utf8' }).trim());
  return { uid: id('-u'), gid: id('-g') };
}

function databasesSection(upstreamUrl: string): string {
  const upstream = new URL(upstreamUrl);
  // `*`: every database name a client asks for is forwarded under the same name.
  return `[databases]\n* = host=${upstream.hostname} port=${upstream.port || '5432'}\n`;
}

export async function startPgBouncer(upstreamUrl: string, options: PgBouncerOptions): Promise<TestPgBouncer> {
  if (!existsSync(PGBOUNCER)) {
    throw new Error(`${PGBOUNCER} is missing: run \`make pgbouncer\` (it installs Debian's pgbouncer).`);
  }
  const user = runAs();
  const dir = mkdtempSync(join(tmpdir(), 'hookgate-pgbouncer-'));
  chmodSync(dir, 0o755);
  if (user) chownSync(dir, user.uid, user.gid);
  const port = await freePort();
  const upstream = new URL(upstreamUrl);
  const upstreamUser = decodeURIComponent(upstream.username) || 'postgres';
  const users: Record<string, string> = {
    [upstreamUser]: decodeURIComponent(upstream.password),
    ...options.users,
  };
  const iniFile = join(dir, 'pgbouncer.ini');
  const logFile = join(dir, 'pgbouncer.log');
  const settings: Record<string, string> = {
    listen_addr: '127.0.0.1',
    listen_port: String(port),
    unix_socket_dir: '',
    auth_type: 'trust',
    auth_file: join(dir, 'users.txt'),
    pool_mode: options.mode,
    default_pool_size: String(options.poolSize ?? 20),
    max_client_conn: '500',
    admin_users: upstreamUser,
    logfile: logFile,
    pidfile: join(dir, 'pgbouncer.pid'),
    // A dead server is found within seconds, not TCP's default hours.
    tcp_keepalive: '1',
    tcp_keepidle: '5',
    tcp_keepintvl: '1',
    tcp_keepcnt: '5',
    server_connect_timeout: '3',
    server_login_retry: '1',
    ...options.settings,
  };
  const writeIni = (upstream: string): void => {
    const body = Object.entries(settings)
      .map(([key, value]) => `${key} = ${value}`)
      .join('\n');
    writeFileSync(iniFile, `${databasesSection(upstream)}[pgbouncer]\n${body}\n`);
    if (user) chownSync(iniFile, user.uid, user.gid);
  };
  const userlist = Object.entries(users).map(([name, password]) => `"${name}" "${password}"\n`);
  writeFileSync(join(dir, 'users.txt'), userlist.join(''));
  writeFileSync(logFile, '');
  if (user) for (const file of ['users.txt', 'pgbouncer.log']) chownSync(join(dir, file), user.uid, user.gid);
  writeIni(upstreamUrl);

  const version = execFileSync(PGBOUNCER, ['--version'], { encoding: 'utf8' }).split('\n')[0]!.trim();
  const child: ChildProcess = spawn(PGBOUNCER, [iniFile], {
    stdio: ['ignore', 'ignore', 'pipe'],
    ...(user ? { uid: user.uid, gid: user.gid } : {}),
  });
  let stderr = '';
  child.stderr?.on('data', (chunk: Buffer) => {
    stderr += chunk.toString('utf8');
  });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const log = (): string => `${readFileSync(logFile, 'utf8')}${stderr}`;
  const url = (database: string, as = upstreamUser): string =>
    `postgres://${encodeURIComponent(as)}@127.0.0.1:${port}/${database}`;

  // Up when its admin console answers.
  const deadline = Date.now() + 15_000;
  for (;;) {
    const client = new pg.Client({ connectionString: url('pgbouncer') });
    client.on('error', () => {});
    try {
      await client.connect();
      await client.query('SHOW VERSION');
      await client.end();
      break;
    } catch (error) {
      await client.end().catch(() => {});
      if (child.exitCode !== null || Date.now() > deadline) {
        child.kill('SIGKILL');
        rmSync(dir, { recursive: true, force: true });
        throw new Error(`PgBouncer did not start: ${(error as Error).message}\n${log()}`);
      }
      await sleep(100);
    }
  }

  return {
    port,
    mode: options.mode,
    version,
    url,
    log,
    async repoint(upstream: string) {
      writeIni(upstream);
      // RELOAD re-reads the file; servers of a changed database are closed once released.
      const admin = new pg.Client({ connectionString: url('pgbouncer') });
      await admin.connect();
      try {
        await admin.query('RELOAD');
      } finally {
        await admin.end();
      }
    },
    async stop() {
      if (child.exitCode === null && child.signalCode === null) {
        child.kill('SIGTERM');
        const timer = setTimeout(() => child.kill('SIGKILL'), 5_000);
        await exited;
        clearTimeout(timer);
      }
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
