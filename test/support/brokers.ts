import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { once } from 'node:events';
import { mkdtempSync, rmSync } from 'node:fs';
import { connect as tcpConnect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { freePort } from '../../services/core/db/embedded.ts';
import { waitFor } from './worker-harness.ts';

const run = promisify(execFile);

/**
 * The message brokers the bus destinations are proven against, the real ones: a `nats-server -js`
 * of the test's own (Debian's binary, installed by `make tools`) on a free loopback port, its
 * store in a temporary directory, killed and restarted on that store when a test asks; and a
 * vhost of the test's own on the machine's RabbitMQ (127.0.0.1:5672, guest/guest, also from
 * `make tools`), deleted afterwards. Nothing else on the machine is touched, but for
 * `rabbitmqStopApp`/`rabbitmqStartApp`, which stop the machine's RabbitMQ for a moment.
 */

export const NATS_SERVER = '/usr/sbin/nats-server';

/** Resolves once something accepts TCP connections on the port: the project's wait for a state. */
async function waitForPort(port: number): Promise<void> {
  await waitFor(
    `something listening on 127.0.0.1:${port}`,
    () =>
      new Promise<boolean>((resolve) => {
        const socket = tcpConnect({ host: '127.0.0.1', port });
        socket.once('connect', () => {
          socket.destroy();
          resolve(true);
        });
        socket.once('error', () => resolve(false));
      }),
  );
}

export interface TestNatsServer {
  readonly url: string;
  readonly port: number;
  /** SIGKILL: no shutdown of its own; what it had written stays in its store. */
  kill(): Promise<void>;
  /** Starts it again on the same port and store; resolves once it accepts connections. */
  start(): Promise<void>;
  stop(): Promise<void>;
  /** Its output so far (for failure messages). */
  log(): string;
}

/** `extraArgs`: more of nats-server's flags, e.g. `--user`/`--pass` for a server that needs them. */
export async function startNatsServer(extraArgs: readonly string[] = []): Promise<TestNatsServer> {
  const port = await freePort();
  const dir = mkdtempSync(join(tmpdir(), 'hookgate-nats-'));
  let child: ChildProcess | null = null;
  let output = '';
  async function start(): Promise<void> {
    const args = ['-js', '-a', '127.0.0.1', '-p', String(port), '-sd', join(dir, 'store'), ...extraArgs];
    child = spawn(NATS_SERVER, args, {
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    child.stdout?.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.stderr?.on('data', (chunk: Buffer) => (output += chunk.toString()));
    await waitForPort(port);
  }
  async function kill(): Promise<void> {
    const running = child;
    child = null;
    if (!running || running.exitCode !== null) return;
    const exited = once(running, 'exit');
    running.kill('SIGKILL');
    await exited;
  }
  await start();
  return {
    url: `nats://127.0.0.1:${port}`,
    port,
    kill,
    start,
    async stop() {
      await kill();
      rmSync(dir, { recursive: true, force: true });
    },
    log: () => output,
  };
}

export interface TestVhost {
  readonly vhost: string;
  /** The vhost's URL, without credentials (hookgate's configuration takes them apart). */
  readonly url: string;
  /** The same with guest:guest, for the test's own clients. */
  readonly clientUrl: string;
  drop(): Promise<void>;
}

export const RABBITMQ_PORT = 5672;

/** A fresh vhost on the machine's RabbitMQ, guest given every permission on it. */
export async function createVhost(): Promise<TestVhost> {
  const vhost = `hookgate-test-${randomBytes(4).toString('hex')}`;
  await run('rabbitmqctl', ['-q', 'add_vhost', vhost]);
  await run('rabbitmqctl', ['-q', 'set_permissions', '-p', vhost, 'guest', '.*', '.*', '.*']);
  return {
    vhost,
    url: `amqp://127.0.0.1:${RABBITMQ_PORT}/${vhost}`,
    clientUrl: `amqp://guest:guest@127.0.0.1:${RABBITMQ_PORT}/${vhost}`,
    async drop() {
      await run('rabbitmqctl', ['-q', 'delete_vhost', vhost]);
    },
  };
}

/** Stops the machine's RabbitMQ application (the Erlang node stays up): keep the outage short. */
export async function rabbitmqStopApp(): Promise<void> {
  await run('rabbitmqctl', ['-q', 'stop_app']);
}

/** Starts it again; resolves once it accepts AMQP connections. */
export async function rabbitmqStartApp(): Promise<void> {
  await run('rabbitmqctl', ['-q', 'start_app']);
  await run('rabbitmqctl', ['-q', 'await_startup']);
  await waitForPort(RABBITMQ_PORT);
}
