import { execFileSync, spawn } from 'node:child_process';
import { chmodSync, chownSync, existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
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
 */
export interface SystemCluster {
  /** A superuser URL (trust authentication, loopback only). */
  readonly url: string;
  readonly major: number;
  stop(): Promise<void>;
}

export function binariesOf(major: number): string {
  return `/usr/lib/postgresql/${major}/bin`;
}

/** PostgreSQL refuses to run as root: as root, the cluster's processes run as `postgres`. */
function runAs(): { uid: number; gid: number } | null {
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

function run(file: string, args: string[], user: { uid: number; gid: number } | null): void {
  execFileSync(file, args, {
    stdio: ['ignore', 'pipe', 'pipe'],
    ...(user ? { uid: user.uid, gid: user.gid } : {}),
    env: { ...process.env, LC_ALL: 'C.UTF-8', LANG: 'C.UTF-8' },
  });
}

export async function startSystemCluster(
  major: number,
  settings: Record<string, string> = {},
): Promise<SystemCluster> {
  const bin = binariesOf(major);
  if (!existsSync(join(bin, 'postgres'))) {
    throw new Error(
      `PostgreSQL ${major}'s binaries are not in ${bin}: run \`make postgres-${major}\` (it installs Debian's postgresql-${major}).`,
    );
  }
  const user = runAs();
  const root = mkdtempSync(join(tmpdir(), `hookgate-pg${major}-`));
  chmodSync(root, 0o755);
  const dataDir = join(root, 'data');
  const socketDir = join(root, 'socket');
  for (const dir of [dataDir, socketDir]) {
    mkdirSync(dir, { mode: 0o700 });
    if (user) chownSync(dir, user.uid, user.gid);
  }
  run(
    join(bin, 'initdb'),
    ['-D', dataDir, '-U', 'postgres', '--auth=trust', '--encoding=UTF8', '--locale=C.UTF-8'],
    user,
  );
  const port = await freePort();
  const conf = {
    listen_addresses: "'127.0.0.1'",
    port: String(port),
    unix_socket_directories: `'${socketDir}'`,
    max_connections: '200',
    ...settings,
  };
  const extra = Object.entries(conf)
    .map(([key, value]) => `${key} = ${value}`)
    .join('\n');
  writeFileSync(join(dataDir, 'postgresql.auto.conf'), `${extra}\n`);
  if (user) chownSync(join(dataDir, 'postgresql.auto.conf'), user.uid, user.gid);
  const logFile = join(root, 'server.log');
  writeFileSync(logFile, '');
  if (user) chownSync(logFile, user.uid, user.gid);
  run(join(bin, 'pg_ctl'), ['-D', dataDir, '-l', logFile, '-w', '-t', '60', 'start'], user);
  const url = `postgres://postgres@127.0.0.1:${port}/postgres`;
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
    async stop() {
      await new Promise<void>((resolveStop) => {
        const child = spawn(join(bin, 'pg_ctl'), ['-D', dataDir, '-m', 'immediate', '-w', 'stop'], {
          stdio: 'ignore',
          ...(user ? { uid: user.uid, gid: user.gid } : {}),
        });
        child.on('exit', () => resolveStop());
        child.on('error', () => resolveStop());
      });
      rmSync(root, { recursive: true, force: true });
    },
  };
}
