import { type ChildProcess, spawn } from 'node:child_process';
import { chmodSync, createWriteStream, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { startEmbeddedPostgres } from '../services/core/db/embedded.ts';
import { migrate } from '../services/core/migrate/migrate.ts';
import { startSystemCluster } from '../test/support/system-postgres.ts';

export const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..');

export interface BenchDatabase {
  readonly url: string;
  stop(): Promise<void>;
}

/**
 * A fresh database of the given major, migrated: for 18, DATABASE_URL if set, else a throwaway
 * embedded PostgreSQL 18; for 15, a throwaway cluster of Debian's PostgreSQL 15 binaries (`make
 * postgres-15`), or BENCH_PG15_URL if set.
 */
export async function benchDatabase(major: 15 | 18 = 18): Promise<BenchDatabase> {
  const given = (major === 18 ? process.env.DATABASE_URL : process.env.BENCH_PG15_URL)?.trim();
  let url: string;
  let stop = async () => {};
  if (given) url = given;
  else if (major === 15) {
    const cluster = await startSystemCluster(15);
    url = cluster.url;
    stop = () => cluster.stop();
  } else {
    const dir = mkdtempSync(join(tmpdir(), 'hookgate-bench-'));
    chmodSync(dir, 0o755);
    const database = await startEmbeddedPostgres(dir);
    url = database.url;
    stop = async () => {
      await database.stop();
      rmSync(dir, { recursive: true, force: true });
    };
  }
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  await migrate(client, url);
  await client.end();
  return { url, stop };
}

/** Starts a Node.js script and resolves once it prints a line matching `ready` or `readyUrl` answers 200. */
export async function startProcess(
  args: readonly string[],
  env: Record<string, string>,
  ready: RegExp | string,
): Promise<ChildProcess> {
  const child = spawn(process.execPath, args, {
    cwd: ROOT,
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  let onData: (chunk: Buffer) => void = () => {};
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`${args.join(' ')} did not start:\n${output}`)), 60_000);
    onData = (chunk: Buffer) => {
      output += chunk.toString('utf8');
      if (typeof ready !== 'string' && ready.test(output)) {
        clearTimeout(timer);
        resolve();
      }
    };
    if (typeof ready === 'string') {
      const poll = setInterval(() => {
        fetch(ready)
          .then((response) => {
            if (response.ok) {
              clearInterval(poll);
              clearTimeout(timer);
              resolve();
            }
          })
          .catch(() => {});
      }, 100);
      child.once('exit', () => clearInterval(poll));
    }
    child.stdout?.on('data', onData);
    child.stderr?.on('data', onData);
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`${args.join(' ')} exited with ${code}:\n${output}`));
    });
  });
  // The start-up output is no longer needed (kept, it would grow for as long as the child runs).
  child.stdout?.off('data', onData);
  child.stderr?.off('data', onData);
  // Keep draining output so the child never blocks on a full pipe; with BENCH_LOG_DIR set, into
  // a file per process, to find out afterwards what a run's processes did.
  const logDir = process.env.BENCH_LOG_DIR;
  if (logDir) {
    mkdirSync(logDir, { recursive: true });
    const name = `${basename(args.find((arg) => arg.endsWith('.ts')) ?? 'node')}-${args.includes('--role') ? `${args[args.indexOf('--role') + 1]}-` : ''}${child.pid}.log`;
    const file = createWriteStream(join(logDir, name));
    file.write(output);
    child.stdout?.pipe(file, { end: false });
    child.stderr?.pipe(file, { end: false });
    child.once('exit', () => file.end());
  }
  child.stdout?.resume();
  child.stderr?.resume();
  return child;
}

export async function stopProcess(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null) return;
  const exited = new Promise((resolve) => child.once('exit', resolve));
  child.kill('SIGTERM');
  await exited;
}
