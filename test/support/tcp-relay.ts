import { connect, createServer, type Server, type Socket } from 'node:net';
import { freePort } from '../../services/core/db/embedded.ts';

/**
 * A TCP relay on 127.0.0.1 in front of one server, for faults the kernel here cannot make:
 * this machine's kernel has no netem (CONFIG_NET_SCH_NETEM is not set), so latency is added
 * here, chunk by chunk and in order, and a link can be stalled (nothing forwarded either way,
 * every connection left open: a silent network, not a reset). Packet loss stays the kernel's
 * (iptables `statistic` DROP, netns.ts).
 */
export interface TcpRelay {
  readonly port: number;
  /** Milliseconds each chunk waits before it is passed on, in both directions. */
  setDelay(ms: number): void;
  /** Stops forwarding in both directions; bytes wait in the relay until resume(). */
  stall(): void;
  resume(): void;
  /** Connections currently relayed. */
  connections(): number;
  stop(): Promise<void>;
}

interface Pipe {
  readonly from: Socket;
  readonly to: Socket;
  readonly queue: Buffer[];
  busy: boolean;
}

export async function startTcpRelay(target: { host: string; port: number }): Promise<TcpRelay> {
  let delay = 0;
  let stalled = false;
  const pipes = new Set<Pipe>();
  const sockets = new Set<Socket>();

  // Chunks leave in arrival order, each no earlier than `delay` after it came.
  const pump = (pipe: Pipe): void => {
    if (pipe.busy || stalled) return;
    const chunk = pipe.queue.shift();
    if (!chunk) return;
    pipe.busy = true;
    const send = (): void => {
      pipe.busy = false;
      if (stalled) {
        pipe.queue.unshift(chunk);
        return;
      }
      if (!pipe.to.destroyed) pipe.to.write(chunk);
      pump(pipe);
    };
    if (delay > 0) setTimeout(send, delay);
    else send();
  };

  const link = (from: Socket, to: Socket): Pipe => {
    const pipe: Pipe = { from, to, queue: [], busy: false };
    pipes.add(pipe);
    from.on('data', (chunk: Buffer) => {
      pipe.queue.push(chunk);
      pump(pipe);
    });
    return pipe;
  };

  const server: Server = createServer((client) => {
    const upstream = connect(target.port, target.host);
    for (const socket of [client, upstream]) {
      sockets.add(socket);
      socket.setNoDelay(true);
      socket.on('error', () => {});
    }
    const a = link(client, upstream);
    const b = link(upstream, client);
    const close = (): void => {
      client.destroy();
      upstream.destroy();
      pipes.delete(a);
      pipes.delete(b);
      sockets.delete(client);
      sockets.delete(upstream);
    };
    client.on('close', close);
    upstream.on('close', close);
  });
  const port = await freePort();
  await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve));

  return {
    port,
    setDelay(ms) {
      delay = ms;
    },
    stall() {
      stalled = true;
    },
    resume() {
      stalled = false;
      for (const pipe of pipes) pump(pipe);
    },
    connections: () => sockets.size / 2,
    async stop() {
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
