import { once } from 'node:events';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

/** What a fake API answered, for asserting paging and the rate-limit wait. */
export interface FakeApiRequest {
  readonly path: string;
  readonly query: URLSearchParams;
  readonly status: number;
  readonly at: number;
  readonly authorization: string | undefined;
}

export interface FakeApi {
  readonly url: string;
  readonly requests: FakeApiRequest[];
  /** The next request is answered 429 with this Retry-After (seconds). */
  rateLimitNext(retryAfterSeconds: number): void;
  close(): Promise<void>;
}

async function listen(
  handle: (
    req: IncomingMessage,
    url: URL,
  ) => { status: number; body: unknown; headers?: Record<string, string> },
): Promise<FakeApi> {
  const requests: FakeApiRequest[] = [];
  let limitNext: number | null = null;
  const server: Server = createServer((req: IncomingMessage, res: ServerResponse) => {
    req.resume();
    const url = new URL(req.url ?? '/', 'http://127.0.0.1');
    let answer: { status: number; body: unknown; headers?: Record<string, string> };
    if (limitNext !== null) {
      answer = {
        status: 429,
        body: { error: { type: 'rate_limit_error', message: 'Too many requests' }, message: 'rate limited' },
        headers: { 'retry-after': String(limitNext) },
      };
      limitNext = null;
    } else {
      answer = handle(req, url);
    }
    requests.push({
      path: url.pathname,
      query: url.searchParams,
      status: answer.status,
      at: Date.now(),
      authorization: req.headers.authorization,
    });
    res.writeHead(answer.status, { 'content-type': 'application/json', ...(answer.headers ?? {}) });
    res.end(JSON.stringify(answer.body));
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    rateLimitNext(seconds) {
      limitNext = seconds;
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

export interface StripeEventObject {
  readonly id: string;
  readonly created: number;
  readonly type: string;
  readonly [field: string]: unknown;
}

/**
 * Stripe's `GET /v1/events` as documented: newest first, `created[gte]`/`created[lt]` bounds,
 * `limit` (at most 100), `starting_after` paging and `has_more`.
 */
export async function startFakeStripeEvents(events: readonly StripeEventObject[]): Promise<FakeApi> {
  const sorted = [...events].sort((a, b) => b.created - a.created || (a.id < b.id ? 1 : -1));
  return await listen((req, url) => {
    if (req.method !== 'GET' || url.pathname !== '/v1/events') {
      return {
        status: 404,
        body: { error: { type: 'invalid_request_error', message: 'Unrecognized request URL' } },
      };
    }
    const q = url.searchParams;
    const gte = Number(q.get('created[gte]') ?? '-Infinity');
    const lt = Number(q.get('created[lt]') ?? 'Infinity');
    const limit = Math.min(Number(q.get('limit') ?? '10'), 100);
    let inWindow = sorted.filter((event) => event.created >= gte && event.created < lt);
    const after = q.get('starting_after');
    if (after) inWindow = inWindow.slice(inWindow.findIndex((event) => event.id === after) + 1);
    return {
      status: 200,
      body: {
        object: 'list',
        url: '/v1/events',
        has_more: inWindow.length > limit,
        data: inWindow.slice(0, limit),
      },
    };
  });
}

export interface GithubDelivery {
  readonly id: number;
  readonly guid: string;
  readonly deliveredAt: Date;
  readonly event: string;
  readonly action: string | null;
  readonly payload: Record<string, unknown>;
  readonly redelivery?: boolean;
}

/**
 * GitHub's repository webhook deliveries: the list newest first with `per_page` and a Link
 * header carrying the next `cursor`, and one delivery with its request headers and payload.
 */
export async function startFakeGithubDeliveries(
  repository: string,
  hookId: number,
  deliveries: readonly GithubDelivery[],
): Promise<FakeApi> {
  const sorted = [...deliveries].sort(
    (a, b) => b.deliveredAt.getTime() - a.deliveredAt.getTime() || b.id - a.id,
  );
  const base = `/repos/${repository}/hooks/${hookId}/deliveries`;
  let origin = '';
  const api = await listen((req, url) => {
    if (req.method !== 'GET') return { status: 404, body: { message: 'Not Found' } };
    if (url.pathname === base) {
      const perPage = Math.min(Number(url.searchParams.get('per_page') ?? '30'), 100);
      const cursor = url.searchParams.get('cursor');
      const start = cursor ? sorted.findIndex((d) => String(d.id) === cursor) : 0;
      const page = sorted.slice(start, start + perPage);
      const next = sorted[start + perPage];
      const headers: Record<string, string> = {};
      if (next) headers.link = `<${origin}${base}?per_page=${perPage}&cursor=${next.id}>; rel="next"`;
      return {
        status: 200,
        headers,
        body: page.map((d) => ({
          id: d.id,
          guid: d.guid,
          delivered_at: d.deliveredAt.toISOString(),
          redelivery: d.redelivery ?? false,
          duration: 0.1,
          status: 'OK',
          status_code: 200,
          event: d.event,
          action: d.action,
          installation_id: null,
          repository_id: 1,
        })),
      };
    }
    const one = new RegExp(`^${base}/(\\d+)$`).exec(url.pathname);
    const delivery = one ? sorted.find((d) => String(d.id) === one[1]) : undefined;
    if (!delivery) return { status: 404, body: { message: 'Not Found' } };
    return {
      status: 200,
      body: {
        id: delivery.id,
        guid: delivery.guid,
        delivered_at: delivery.deliveredAt.toISOString(),
        redelivery: delivery.redelivery ?? false,
        duration: 0.1,
        status: 'OK',
        status_code: 200,
        event: delivery.event,
        action: delivery.action,
        installation_id: null,
        repository_id: 1,
        url: '',
        request: {
          headers: {
            Accept: '*/*',
            'X-GitHub-Delivery': delivery.guid,
            'X-GitHub-Event': delivery.event,
            'X-GitHub-Hook-ID': String(hookId),
            'Content-Type': 'application/json',
          },
          payload: delivery.payload,
        },
        response: { headers: {}, payload: 'ok' },
      },
    };
  });
  origin = api.url;
  return api;
}
