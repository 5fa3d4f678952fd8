import { connect, createServer, type Socket } from 'node:net';
import { freePort } from '../../services/core/db/embedded.ts';

/**
 * A TCP load balancer on 127.0.0.1, as a Service in front of a Deployment's ready pods: each new
 * connection goes to the next port in rotation; a port taken out of rotation gets no new
 * connections, and its open ones stay until either end closes them (a draining gateway answers
 * what arrives on them with `Connection: close`).
 */
export interface Balancer {
  readonly port: number;
  /** The ports new connections go to, in turn. */
  setRotation(ports: readonly number[]): void;
  stop(): Promise<void>;
}

export async function startBalancer(initial: readonly number[]): Promise<Balancer> {
  let rotation = [...initial];
  let next = 0;
  const sockets = new Set<Socket>();
  const track = (socket: Socket) => {
    sockets.add(socket);
    socket.once('close', () => sockets.delete(socket));
  };
  const server = createServer((client) => {
    track(client);
    if (rotation.length === 0) {
      client.destroy();
      return;
    }
    const port = rotation[next++ % rotation.length]!;
    const upstream = connect({ host: '127.0.0.1', port });
    track(upstream);
    client.pipe(upstream);
    upstream.pipe(client);
    // Either end going away ends the pair: half a connection would leave the driver waiting.
    client.on('error', () => upstream.destroy());
    upstream.on('error', () => client.destroy());
    client.on('close', () => upstream.destroy());
    upstream.on('close', () => client.destroy());
  });
  const port = await freePort();
  await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve));
  return {
    port,
    setRotation(ports) {
      rotation = [...ports];
    },
    async stop() {
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
