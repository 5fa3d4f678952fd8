// A running hookgate for the storage scenarios: one gateway and some worker processes started
// with `hookgate serve` from a config document, exactly as an operator would run them.
import type { ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { stringify } from 'yaml';
import { freePort } from '../services/core/db/embedded.ts';
import { startProcess, stopProcess } from './processes.ts';

export interface RunningStack {
  readonly gatewayUrl: string;
  readonly gateway: ChildProcess;
  readonly workers: readonly ChildProcess[];
  stop(): Promise<void>;
}

export async function startStack(
  url: string,
  document: Record<string, unknown>,
  workers: number,
): Promise<RunningStack> {
  const dir = mkdtempSync(join(tmpdir(), 'hookgate-bench-stack-'));
  const configFile = join(dir, 'hookgate.yaml');
  writeFileSync(configFile, stringify(document));
  const env = (port: number) => ({
    DATABASE_URL: url,
    PORT: String(port),
    METRICS_PORT: '0',
    // `hookgate is serving` is an info line.
    LOG_LEVEL: 'info',
  });
  const children: ChildProcess[] = [];
  const stop = async () => {
    await Promise.all(children.map(stopProcess));
    rmSync(dir, { recursive: true, force: true });
  };
  try {
    const port = await freePort();
    const gateway = await startProcess(
      ['services/cli/main.ts', 'serve', '--role', 'gateway', '--config', configFile],
      env(port),
      `http://127.0.0.1:${port}/readyz`,
    );
    children.push(gateway);
    for (let i = 0; i < workers; i += 1) {
      children.push(
        await startProcess(
          ['services/cli/main.ts', 'serve', '--role', 'worker', '--config', configFile],
          env(0),
          /hookgate is serving/,
        ),
      );
    }
    return { gatewayUrl: `http://127.0.0.1:${port}`, gateway, workers: children.slice(1), stop };
  } catch (error) {
    await stop();
    throw error;
  }
}
