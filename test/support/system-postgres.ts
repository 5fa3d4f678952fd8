import { execFileSync, spawn } from 'node:child_process';
import {
  appendFileSync,
  chmodSync,
  chownSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { freePort } from '../../services/core/db/embedded.ts';

/**
 * A throwaway PostgreSQL cluster made from a Debian major's own binaries
 * (`/usr/lib/postgresql/<major>/bin`, package `postgresql-<major>`, installed by `make
 * postgres-15`), so that the tests and benchmarks prove hookgate on a second major the way they
 * do on the embedded 18: a cluster of their own in a temporary directory, on a free loopback
 * port, removed afterwards. A server that happens to run on the machine is never used.
 *
 * The database-tier tests also make streaming standbys of such a cluster (`startStandby`,
 * pg_basebackup), crash a cluster as a host would (`crash`: SIGKILL to every process of it),
 * promote a standby, and run a cluster inside a network namespace of their own (netns.ts).
 */
export interface SystemCluster {
  /** A superuser URL (trust authentication). */
  readonly url: string;
  readonly major: number;
  readonly host: string;
  readonly port: number;
  readonly dataDir: string;
  /** The server's log so far. */
  log(): string;
  /** SIGKILL to the postmaster and every backend at once: a host losing power, nothing flushed. */
  crash(): void;
  /** Ends recovery on a standby (pg_ctl promote, waiting until it accepts writes). */
  promote(): Promise<void>;
  stop(): Promise<void>;
}

export interface ClusterOptions {
  /** Address to listen on; default 127.0.0.1. */
  readonly host?: string;
  /** Network namespace to run the server in (see netns.ts); its address must be `host`. */
  readonly netns?: string;
}

export function binariesOf(major: number): string {
  return `/usr/lib/postgresql/${major}/bin`;
}

interface User {
  readonly uid: number;
  readonly gid: number;
}

/** PostgreSQL refuses to run as root: as root, the cluster's processes run as `postgres`. */
function runAs(): User | null {
  if (process.getuid?.() !== 0) return null;
  const line = (args: string[]): number => Number(execFileSync('id', args, { encoding: 'utf8' }).trim());
  try {
    return { uid: line(['-u', 'postgres']), gid: line(['-g', 'postgres']) };
  } catch {
    throw new Error(
      `PostgreSQL cannot run as root and there is no 'postgres' user: install the postgresql-15 package (make postgres-15).`,
    );
  }
}

/** The command line that runs `file` as the cluster's user, inside `netns` when given. */
function command(
  file: string,
  args: readonly string[],
  user: User | null,
  netns?: string,
): [string, string[]] {
  if (!netns) return [file, [...args]];
  if (!user) throw new Error('a cluster in a network namespace needs root (ip netns exec)');
  return [
    'ip',
    [
      'netns',
      'exec',
      netns,
      'setpriv',
      `--reuid=${user.uid}`,
      `--regid=${user.gid}`,
      '--clear-groups',
      file,
      ...args,
    ],
  ];
}

function run(file: string, args: string[], user: User | null, netns?: string): void {
  const [bin, argv] = command(file, args, user, netns);
  execFileSync(bin, argv, {
    stdio: ['ignore', 'pipe', 'pipe'],
    ...(user && !netns ? { uid: user.uid, gid: user.gid } : {}),
    env: { ...process.env, LC_ALL: 'C.UTF-8', LANG: 'C.UTF-8' },
  });
}

function makeDirs(root: string, user: User | null): { dataDir: string; socketDir: string } {
  chmodSync(root, 0o755);
  const dataDir = join(root, 'data');
  const socketDir = join(root, 'socket');
  for (const dir of [dataDir, socketDir]) {
    mkdirSync(dir, { mode: 0o700 });
    if (user) chownSync(dir, user.uid, user.gid);
  }
  return { dataDir, socketDir };
}

function settingsText(settings: Record<string, string>): string {
  return `${Object.entries(settings)
    .map(([key, value]) => `${key} = ${value}`)
    .join('\n')}\n`;
}

/** The pids of the postmaster and its children (the backends, the WAL writer, …). */
function clusterPids(dataDir: string): number[] {
  const pidFile = join(dataDir, 'postmaster.pid');
  if (!existsSync(pidFile)) return [];
  const postmaster = Number(readFileSync(pidFile, 'utf8').split('\n')[0]);
  const children: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      // The parent pid is the second field after the parenthesised command name.
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      if (ppid === postmaster) children.push(Number(entry));
    } catch {
      // The process ended while the list was read.
    }
  }
  return [postmaster, ...children];
}

async function started(
  major: number,
  root: string,
  dataDir: string,
  host: string,
  port: number,
  user: User | null,
  netns: string | undefined,
): Promise<SystemCluster> {
  const bin = binariesOf(major);
  const logFile = join(root, 'server.log');
  writeFileSync(logFile, '');
  if (user) chownSync(logFile, user.uid, user.gid);
  run(join(bin, 'pg_ctl'), ['-D', dataDir, '-l', logFile, '-w', '-t', '60', 'start'], user, netns);
  const url = `postgres://postgres@${host}:${port}/postgres`;
  // pg_ctl -w waited for the server to accept connections; check it is this major.
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  const version = await client.query<{ server_version_num: string }>('SHOW server_version_num');
  await client.end();
  const actual = Math.floor(Number(version.rows[0]!.server_version_num) / 10_000);
  if (actual !== major) throw new Error(`started PostgreSQL ${actual}, expected ${major}`);
  return {
    url,
    major,
    host,
    port,
    dataDir,
    log: () => readFileSync(logFile, 'utf8'),
    crash() {
      for (const pid of clusterPids(dataDir)) {
        try {
          process.kill(pid, 'SIGKILL');
        } catch {
          // Already gone.
        }
      }
    },
    async promote() {
      run(join(bin, 'pg_ctl'), ['-D', dataDir, '-w', '-t', '60', 'promote'], user, netns);
    },
    async stop() {
      await new Promise<void>((resolveStop) => {
        const child = spawn(join(bin, 'pg_ctl'), ['-D', dataDir, '-m', 'immediate', '-w', 'stop'], {
          stdio: 'ignore',
          ...(user ? { uid: user.uid, gid: user.gid } : {}),
        });
        child.on('exit', () => resolveStop());
        child.on('error', () => resolveStop());
      });
      // A crashed cluster's stop finds no server; its processes were killed already.
      rmSync(root, { recursive: true, force: true });
    },
  };
}

function requireBinaries(major: number): void {
  const bin = binariesOf(major);
  if (!existsSync(join(bin, 'postgres'))) {
    throw new Error(
      `PostgreSQL ${major}'s binaries are not in ${bin}: run \`make postgres-${major}\` (it installs Debian's postgresql-${major}).`,
    );
  }
}

export async function startSystemCluster(
  major: number,
  settings: Record<string, string> = {},
  options: ClusterOptions = {},
): Promise<SystemCluster> {
  requireBinaries(major);
  const bin = binariesOf(major);
  const user = runAs();
  const host = options.host ?? '127.0.0.1';
  const root = mkdtempSync(join(tmpdir(), `hookgate-pg${major}-`));
  const { dataDir, socketDir } = makeDirs(root, user);
  run(
    join(bin, 'initdb'),
    ['-D', dataDir, '-U', 'postgres', '--auth=trust', '--encoding=UTF8', '--locale=C.UTF-8'],
    user,
  );
  if (options.host && options.host !== '127.0.0.1') {
    // Clients come over the namespace's link, not loopback (a throwaway cluster: trust).
    appendFileSync(
      join(dataDir, 'pg_hba.conf'),
      'host all all 0.0.0.0/0 trust\nhost replication all 0.0.0.0/0 trust\n',
    );
  }
  const port = await freePort();
  const conf = {
    listen_addresses: `'${host}'`,
    port: String(port),
    unix_socket_directories: `'${socketDir}'`,
    max_connections: '200',
    ...settings,
  };
  writeFileSync(join(dataDir, 'postgresql.auto.conf'), settingsText(conf));
  if (user) chownSync(join(dataDir, 'postgresql.auto.conf'), user.uid, user.gid);
  return await started(major, root, dataDir, host, port, user, options.netns);
}

export interface StandbyOptions {
  /** application_name the standby streams under (what synchronous_standby_names lists). */
  readonly name: string;
  /** Where the standby reaches the primary; default the primary itself (e.g. a relay's port). */
  readonly via?: { readonly host: string; readonly port: number };
}

/**
 * A streaming standby of `primary`, made with pg_basebackup (WAL streamed during the copy, -R
 * writes standby.signal), on its own free port. It starts in recovery and follows the primary
 * until promoted.
 */
export async function startStandby(primary: SystemCluster, options: StandbyOptions): Promise<SystemCluster> {
  const bin = binariesOf(primary.major);
  const user = runAs();
  const root = mkdtempSync(join(tmpdir(), `hookgate-pg${primary.major}-standby-`));
  // pg_basebackup fills the empty directory made for it (it runs as the cluster's user).
  const { dataDir, socketDir } = makeDirs(root, user);
  run(
    join(bin, 'pg_basebackup'),
    [
      '-h',
      primary.host,
      '-p',
      String(primary.port),
      '-U',
      'postgres',
      '-D',
      dataDir,
      '-X',
      'stream',
      '-R',
      '-c',
      'fast',
    ],
    user,
  );
  const port = await freePort();
  const upstream = options.via ?? { host: primary.host, port: primary.port };
  // After the primary's own settings (copied with the data): the later line wins.
  appendFileSync(
    join(dataDir, 'postgresql.auto.conf'),
    settingsText({
      port: String(port),
      unix_socket_directories: `'${socketDir}'`,
      primary_conninfo: `'host=${upstream.host} port=${upstream.port} user=postgres application_name=${options.name}'`,
      // The promoted standby has no standby of its own: it must not wait for one.
      synchronous_standby_names: "''",
    }),
  );
  return await started(primary.major, root, dataDir, primary.host, port, user, undefined);
}
