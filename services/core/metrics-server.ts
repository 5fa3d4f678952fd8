import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Registry } from 'prom-client';

/** `/metrics` on its own port, so scrapes never queue behind webhook traffic or share its exposure. */
export async function startMetricsServer(
  registry: Registry,
  port: number,
  host = '0.0.0.0',
): Promise<{ port: number; stop(): Promise<void> }> {
  const server: Server = createServer((req, res) => {
    if (req.method === 'GET' && req.url?.split('?')[0] === '/metrics') {
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
