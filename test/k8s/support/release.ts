import { randomBytes } from 'node:crypto';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { stringify } from 'yaml';
import { type SystemCluster, startSystemCluster } from '../../support/system-postgres.ts';
import { CHART, helm, kubectlOk, NODE_IP, pods, until } from './cluster.ts';
import { IMAGE } from './podman.ts';

// A hookgate release on the test cluster as a user installs one: a database of its own on a
// PostgreSQL that listens on the cluster's bridge (the machine's side of it), values files
// written like a user's, `helm install --wait`.

/** PostgreSQL 15 on the bridge address, where pods reach it (trust: a throwaway cluster). */
export function startClusterDatabase(): Promise<SystemCluster> {
  return startSystemCluster(15, { max_connections: '400' }, { host: NODE_IP });
}

/** A new database on `server`; returns its URL (reachable from pods and from this machine). */
export async function createDatabase(server: SystemCluster, name: string): Promise<string> {
  const client = new pg.Client({ connectionString: server.url });
  await client.connect();
  try {
    await client.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
    await client.query(`CREATE DATABASE ${name}`);
  } finally {
    await client.end();
  }
  const url = new URL(server.url);
  url.pathname = `/${name}`;
  return url.toString();
}

export const webhookSecret = (): string => `whsec_${randomBytes(24).toString('base64')}`;

/** The image as `make image` built it, imported into containerd: pulled from nowhere. */
export function imageValues(tag = IMAGE.replace(/^.*:/, '')) {
  return { image: { repository: IMAGE.replace(/:[^:/]+$/, ''), tag, pullPolicy: 'Never' } };
}

/** Writes values to a file of their own, for `helm -f`. */
export function valuesFile(values: object): string {
  const file = join(mkdtempSync(join(tmpdir(), 'hookgate-values-')), 'values.yaml');
  writeFileSync(file, stringify(values));
  return file;
}

export interface Installed {
  readonly seconds: number;
  readonly output: string;
  readonly code: number;
}

export async function install(
  release: string,
  namespace: string,
  valuesFiles: readonly string[],
  extra: readonly string[] = [],
): Promise<Installed> {
  const result = await helm([
    'install',
    release,
    CHART,
    '--namespace',
    namespace,
    ...valuesFiles.flatMap((file) => ['-f', file]),
    '--wait',
    '--timeout',
    '10m',
    ...extra,
  ]);
  return { seconds: result.seconds, output: result.stdout + result.stderr, code: result.code };
}

/** Every pod of the release Ready; returns them (with each one's container start → Ready). */
export function allReady(namespace: string, release: string) {
  return until(`${release}'s pods Ready`, 300, async () => {
    const list = (await pods(namespace, `app.kubernetes.io/instance=${release}`)).filter(
      (pod) => pod.component !== 'migrate' && pod.component !== 'test',
    );
    return list.length > 0 && list.every((pod) => pod.ready) ? list : null;
  });
}

export async function secret(namespace: string, name: string, data: Record<string, string>): Promise<void> {
  await kubectlOk([
    'create',
    'secret',
    'generic',
    name,
    '--namespace',
    namespace,
    ...Object.entries(data).map(([key, value]) => `--from-literal=${key}=${value}`),
  ]);
}
