import type { Server } from 'node:http';
import { Server as NetServer, type Socket } from 'node:net';

/**
 * How long a connection must stay idle (no request in progress, no byte received) after the
 * drain starts before it is closed. A request whose bytes were already on their way when the
 * signal came is read within this and answered, instead of being reset with its connection.
 */
export const DRAIN_IDLE_MS = 1_000;
const SWEEP_MS = 50;

interface Tracked {
  /** Requests on this connection not yet answered (or abandoned). */
  busy: number;
  /** socket.bytesRead when last looked at: a change means a request is arriving. */
  bytesRead: number;
  /** Since when the connection has been idle, as far as the sweep has seen. */
  idleSince: number;
}

export interface Drain {
  /** True from the moment the drain starts: every response from then on closes its connection. */
  readonly draining: boolean;
  /**
   * Stops accepting connections and finishes the open ones: requests in progress are answered,
   * requests that still arrive on open connections are served and answered with
   * `Connection: close`, and a connection idle for DRAIN_IDLE_MS is closed. Resolves once every
   * connection is closed (`drained`), or at `timeoutMs` after closing what is left (`timed_out`).
   */
  drain(timeoutMs: number): Promise<{ readonly outcome: 'drained' | 'timed_out'; readonly cut: number }>;
}

/**
 * Tracks a server's connections so that a shutdown can drain them. Node's own `server.close()`
 * closes every idle keep-alive connection at once, and a request already sent on one of them but
 * not yet read is lost with a reset; that is why the drain stops the listener alone.
 */
export function trackConnections(server: Server, now: () => number = Date.now): Drain {
  const connections = new Map<Socket, Tracked>();
  let draining = false;

  server.on('connection', (socket: Socket) => {
    connections.set(socket, { busy: 0, bytesRead: socket.bytesRead, idleSince: now() });
    socket.once('close', () => connections.delete(socket));
  });
  server.on('request', (req, res) => {
    const tracked = connections.get(req.socket);
    if (draining) res.setHeader('connection', 'close');
    if (!tracked) return;
    tracked.busy += 1;
    res.once('close', () => {
      tracked.busy -= 1;
      tracked.bytesRead = req.socket.bytesRead;
      tracked.idleSince = now();
    });
  });

  return {
    get draining() {
      return draining;
    },
    drain(timeoutMs) {
      draining = true;
      const started = now();
      // net.Server's close stops the listener; http.Server's would also close idle connections.
      const closed = new Promise<void>((resolve) => NetServer.prototype.close.call(server, () => resolve()));
      return new Promise((resolve) => {
        let finished = false;
        const finish = (outcome: 'drained' | 'timed_out', cut: number) => {
          if (finished) return;
          finished = true;
          clearInterval(sweep);
          clearTimeout(deadline);
          resolve({ outcome, cut });
        };
        const sweep = setInterval(() => {
          const at = now();
          for (const [socket, tracked] of connections) {
            if (tracked.busy > 0) continue;
            if (socket.bytesRead !== tracked.bytesRead) {
              tracked.bytesRead = socket.bytesRead;
              tracked.idleSince = at;
              continue;
            }
            if (at - Math.max(tracked.idleSince, started) >= DRAIN_IDLE_MS) socket.destroy();
          }
        }, SWEEP_MS);
        const deadline = setTimeout(() => {
          const cut = connections.size;
          for (const socket of connections.keys()) socket.destroy();
          finish('timed_out', cut);
        }, timeoutMs);
        void closed.then(() => finish('drained', 0));
      });
    },
  };
}
