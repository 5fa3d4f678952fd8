import { createServer, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Registry } from 'prom-client';

/**
 * Probes on the metrics listener: the worker role has no other HTTP port, and a probe must not
 * queue behind webhook traffic either. `ready` answers null when ready, else a public reason.
 */
export interface ProbeChecks {
  readonly ready: () => Promise<string | null>;
}

function sendJson(res: ServerResponse, status: number, body: unknown): void {
  res.writeHead(status, { 'content-type': 'application/json' });
  res.end(JSON.stringify(body));
}

/** `/metrics` on its own port, so scrapes never queue behind webhook traffic or share its exposure. */
export async function startMetricsServer(
  registry: Registry,
  port: number,
  host = '0.0.0.0',
  probes?: ProbeChecks,
): Promise<{ port: number; stop(): Promise<void> }> {
  const server: Server = createServer((req, res) => {
    const path = req.url?.split('?')[0];
    if (req.method === 'GET' && path === '/metrics') {
      registry
        .metrics()
        .then((text) => {
          res.writeHead(200, { 'content-type': registry.contentType });
          res.end(text);
        })
        .catch((error: Error) => {
          res.writeHead(500, { 'content-type': 'text/plain' });
          res.end(error.message);
        });
      return;
    }
    if (probes && req.method === 'GET' && path === '/healthz') {
      sendJson(res, 200, { status: 'ok' });
      return;
    }
    if (probes && req.method === 'GET' && path === '/readyz') {
      probes
        .ready()
        .then((reason) =>
          reason
            ? sendJson(res, 503, { status: 'not_ready', reason })
            : sendJson(res, 200, { status: 'ready' }),
        )
        .catch(() => sendJson(res, 503, { status: 'not_ready', reason: 'readiness check failed' }));
      return;
    }
    res.writeHead(404, { 'content-type': 'text/plain' });
    res.end('not found\n');
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => resolve());
  });
  return {
    port: (server.address() as AddressInfo).port,
    stop: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
