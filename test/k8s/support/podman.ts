import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { ROOT } from '../../support/process.ts';

/** The image `make image` builds and the cluster tests install (IMAGE=... overrides both). */
export const IMAGE = process.env.HOOKGATE_IMAGE ?? 'localhost/hookgate:dev';

// podman with the settings this machine needs (no systemd, cgroups v1 in hybrid mode: see the file).
const ENV = { ...process.env, CONTAINERS_CONF: join(ROOT, 'test/k8s/image/containers.conf') };

export interface Finished {
  readonly code: number;
  readonly stdout: string;
  readonly stderr: string;
}

/** Runs `podman <args>` to completion. */
export function podman(args: readonly string[]): Promise<Finished> {
  return new Promise((resolve, reject) => {
    const child = spawn('podman', args, { env: ENV, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => {
      stdout += chunk.toString('utf8');
    });
    child.stderr.on('data', (chunk: Buffer) => {
      stderr += chunk.toString('utf8');
    });
    child.on('error', reject);
    child.on('exit', (code) => resolve({ code: code ?? -1, stdout, stderr }));
  });
}

/** Like `podman`, but a non-zero exit is an error naming the command and its output. */
export async function podmanOk(args: readonly string[]): Promise<string> {
  const result = await podman(args);
  if (result.code !== 0) {
    throw new Error(`podman ${args.join(' ')} exited ${result.code}:\n${result.stdout}${result.stderr}`);
  }
  return result.stdout;
}
