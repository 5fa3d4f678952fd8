import { once } from 'node:events';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface FakeStripeRequest {
  readonly method: string;
  readonly path: string;
  readonly authorization: string | undefined;
}

/**
 * A local stand-in for the Stripe API's subscription reads, on 127.0.0.1. Tests set what the
 * "real" current state is; the server answers like Stripe (404 `resource_missing` for unknown).
 */
export interface FakeStripe {
  /** `http://127.0.0.1:<port>`, for the billing option `stripeApiBase`. */
  readonly url: string;
  readonly requests: FakeStripeRequest[];
  setSubscription(subscription: { id: string; [field: string]: unknown }): void;
  deleteSubscription(id: string): void;
  /** Every answer waits this long first (to widen race windows). */
  delayMs: number;
  /** The next answers wait these many ms each (then delayMs again). */
  delayNext(...ms: number[]): void;
  /** The next n requests answer with this status (e.g. 500) instead. */
  failNext(n: number, status: number): void;
  close(): Promise<void>;
}

export async function startFakeStripe(): Promise<FakeStripe> {
  const subscriptions = new Map<string, Record<string, unknown>>();
  const requests: FakeStripeRequest[] = [];
  let failures: { left: number; status: number } = { left: 0, status: 500 };
  const delays: number[] = [];

  const send = (res: ServerResponse, status: number, body: unknown) => {
    res.writeHead(status, { 'content-type': 'application/json', 'request-id': `req_${requests.length}` });
    res.end(JSON.stringify(body));
  };

  const fake: FakeStripe = {
    url: '',
    requests,
    delayMs: 0,
    setSubscription(subscription) {
      subscriptions.set(subscription.id, { object: 'subscription', ...subscription });
    },
    deleteSubscription(id) {
      subscriptions.delete(id);
    },
    delayNext(...ms) {
      delays.push(...ms);
    },
    failNext(n, status) {
      failures = { left: n, status };
    },
    close: async () => {},
  };

  const server: Server = createServer(async (req: IncomingMessage, res: ServerResponse) => {
    const path = new URL(req.url ?? '/', 'http://x').pathname;
    requests.push({ method: req.method ?? '', path, authorization: req.headers.authorization });
    req.resume();
    // Read the current state before the delay, as a real API answers from one snapshot.
    const match = /^\/v1\/subscriptions\/([^/]+)$/.exec(path);
    const snapshot = match ? subscriptions.get(decodeURIComponent(match[1]!)) : undefined;
    const delay = delays.shift() ?? fake.delayMs;
    if (delay > 0) await new Promise((resolve) => setTimeout(resolve, delay));
    if (failures.left > 0) {
      failures.left -= 1;
      send(res, failures.status, { error: { type: 'api_error', message: 'fake failure' } });
      return;
    }
    if (req.method !== 'GET' || !match) {
      send(res, 404, {
        error: { type: 'invalid_request_error', message: `Unrecognized request URL (${path})` },
      });
      return;
    }
    if (!snapshot) {
      send(res, 404, {
        error: {
          type: 'invalid_request_error',
          code: 'resource_missing',
          param: 'id',
          message: `No such subscription: '${match[1]}'`,
        },
      });
      return;
    }
    send(res, 200, snapshot);
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as AddressInfo;
  return Object.assign(fake, {
    url: `http://127.0.0.1:${port}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  });
}
