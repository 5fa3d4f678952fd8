import { verify as cryptoVerify, type KeyObject } from 'node:crypto';
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
  /** Requests matching this are answered 500 until it is set to null (a page failing). */
  failWhere(match: ((url: URL) => boolean) | null): void;
  /** Each answer waits this long first (to let concurrent listings overlap). */
  delayAnswers(ms: number): void;
  /**
   * Requests after the next `answered` ones are held unanswered until `release()` (a run caught in
   * the middle of a request, for as long as the test needs); null holds none.
   */
  holdAfter(answered: number | null): void;
  /** How many requests are held right now. */
  held(): number;
  /** Answers every held request and holds no more. */
  release(): void;
  /** Most requests that were being answered at once. */
  peakInFlight(): number;
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
  let failing: ((url: URL) => boolean) | null = null;
  let delayMs = 0;
  let inFlight = 0;
  let peak = 0;
  let holdAfter: number | null = null;
  let arrived = 0;
  const holding = new Set<() => void>();
  const server: Server = createServer(async (req: IncomingMessage, res: ServerResponse) => {
    req.resume();
    arrived += 1;
    if (holdAfter !== null && arrived > holdAfter) {
      await new Promise<void>((resolve) => {
        const done = () => {
          holding.delete(done);
          resolve();
        };
        holding.add(done);
      });
    }
    inFlight += 1;
    peak = Math.max(peak, inFlight);
    if (delayMs > 0) await new Promise((resolve) => setTimeout(resolve, delayMs));
    inFlight -= 1;
    const url = new URL(req.url ?? '/', 'http://127.0.0.1');
    let answer: { status: number; body: unknown; headers?: Record<string, string> };
    if (failing?.(url)) {
      answer = {
        status: 500,
        body: { error: { type: 'api_error', message: 'fake failure' }, message: 'fake failure' },
      };
    } else if (limitNext !== null) {
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
    failWhere(match) {
      failing = match;
    },
    delayAnswers(ms) {
      delayMs = ms;
    },
    holdAfter(answered) {
      holdAfter = answered === null ? null : arrived + answered;
    },
    held: () => holding.size,
    release() {
      holdAfter = null;
      for (const done of [...holding]) done();
    },
    peakInFlight: () => peak,
    close: () =>
      new Promise<void>((resolve) => {
        for (const done of [...holding]) done();
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
  /** The receiver's answer to this delivery (default 200). */
  readonly statusCode?: number;
}

/** Which webhook a fake GitHub serves deliveries of, as the three deliveries APIs address them. */
export type GithubHookTarget =
  | { readonly repository: string; readonly hookId: number }
  | { readonly organization: string; readonly hookId: number }
  /** A GitHub App: its endpoints take only a JWT (RS256, `iss` the App id) that this key verifies. */
  | { readonly app: { readonly appId: number; readonly publicKey: KeyObject } };

/** The verified claims of the App JWT each request carried (App targets only). */
export interface FakeGithub extends FakeApi {
  readonly jwtClaims: Record<string, unknown>[];
}

function base64url(part: string): Buffer {
  return Buffer.from(part, 'base64url');
}

/** GitHub's check of an App JWT: RS256 over header.payload, issuer, and a live iat/exp window. */
function verifyAppJwt(
  authorization: string | undefined,
  app: { readonly appId: number; readonly publicKey: KeyObject },
): Record<string, unknown> | string {
  const token = /^Bearer (.+)$/i.exec(authorization ?? '')?.[1];
  const parts = token?.split('.');
  if (parts?.length !== 3) return 'A JSON web token could not be decoded';
  const [header, payload, signature] = parts as [string, string, string];
  if (JSON.parse(base64url(header).toString('utf8')).alg !== 'RS256') return "'alg' must be RS256";
  const verified = cryptoVerify(
    'sha256',
    Buffer.from(`${header}.${payload}`),
    app.publicKey,
    base64url(signature),
  );
  if (!verified) return 'A JSON web token could not be decoded';
  const claims = JSON.parse(base64url(payload).toString('utf8')) as Record<string, unknown>;
  const now = Math.floor(Date.now() / 1000);
  if (String(claims.iss) !== String(app.appId)) return "'Issuer' claim ('iss') must be an Integer";
  if (typeof claims.exp !== 'number' || claims.exp <= now || claims.exp - now > 600)
    return "'Expiration time' claim ('exp') is too far in the future";
  if (typeof claims.iat !== 'number' || claims.iat > now + 60)
    return "'Issued at' claim ('iat') must be an Integer representing a time in the past";
  return claims;
}

/**
 * GitHub's webhook deliveries for a repository, an organization or an App webhook: the list
 * newest first with `per_page` and a Link header carrying the next `cursor`, and one delivery
 * with its request headers and payload. The App's endpoints refuse anything but a valid JWT.
 */
export async function startFakeGithubHookDeliveries(
  target: GithubHookTarget,
  deliveries: readonly GithubDelivery[],
): Promise<FakeGithub> {
  const sorted = [...deliveries].sort(
    (a, b) => b.deliveredAt.getTime() - a.deliveredAt.getTime() || b.id - a.id,
  );
  const base =
    'repository' in target
      ? `/repos/${target.repository}/hooks/${target.hookId}/deliveries`
      : 'organization' in target
        ? `/orgs/${target.organization}/hooks/${target.hookId}/deliveries`
        : '/app/hook/deliveries';
  const hookHeaders: Record<string, string> =
    'repository' in target
      ? { 'X-GitHub-Hook-ID': String(target.hookId), 'X-GitHub-Hook-Installation-Target-Type': 'repository' }
      : 'organization' in target
        ? {
            'X-GitHub-Hook-ID': String(target.hookId),
            'X-GitHub-Hook-Installation-Target-Type': 'organization',
          }
        : {
            'X-GitHub-Hook-ID': '1',
            'X-GitHub-Hook-Installation-Target-Type': 'integration',
            'X-GitHub-Hook-Installation-Target-ID': String(target.app.appId),
          };
  const jwtClaims: Record<string, unknown>[] = [];
  let origin = '';
  const api = await listen((req, url) => {
    if (req.method !== 'GET') return { status: 404, body: { message: 'Not Found' } };
    if ('app' in target) {
      const claims = verifyAppJwt(req.headers.authorization, target.app);
      if (typeof claims === 'string') return { status: 401, body: { message: claims } };
      jwtClaims.push(claims);
    }
    const summary = (d: GithubDelivery) => ({
      id: d.id,
      guid: d.guid,
      delivered_at: d.deliveredAt.toISOString(),
      redelivery: d.redelivery ?? false,
      duration: 0.1,
      status: (d.statusCode ?? 200) < 300 ? 'OK' : 'Invalid HTTP Response: 503',
      status_code: d.statusCode ?? 200,
      event: d.event,
      action: d.action,
      installation_id: null,
      repository_id: 1,
    });
    if (url.pathname === base) {
      const perPage = Math.min(Number(url.searchParams.get('per_page') ?? '30'), 100);
      const cursor = url.searchParams.get('cursor');
      const start = cursor ? sorted.findIndex((d) => String(d.id) === cursor) : 0;
      const page = sorted.slice(start, start + perPage);
      const next = sorted[start + perPage];
      const headers: Record<string, string> = {};
      if (next) headers.link = `<${origin}${base}?per_page=${perPage}&cursor=${next.id}>; rel="next"`;
      return { status: 200, headers, body: page.map(summary) };
    }
    const one = new RegExp(`^${base}/(\\d+)$`).exec(url.pathname);
    const delivery = one ? sorted.find((d) => String(d.id) === one[1]) : undefined;
    if (!delivery) return { status: 404, body: { message: 'Not Found' } };
    return {
      status: 200,
      body: {
        ...summary(delivery),
        url: '',
        request: {
          headers: {
            Accept: '*/*',
            'X-GitHub-Delivery': delivery.guid,
            'X-GitHub-Event': delivery.event,
            ...hookHeaders,
            'Content-Type': 'application/json',
          },
          payload: delivery.payload,
        },
        response: { headers: {}, payload: 'ok' },
      },
    };
  });
  origin = api.url;
  return { ...api, jwtClaims };
}

/** A repository webhook's deliveries (see startFakeGithubHookDeliveries). */
export async function startFakeGithubDeliveries(
  repository: string,
  hookId: number,
  deliveries: readonly GithubDelivery[],
): Promise<FakeApi> {
  return await startFakeGithubHookDeliveries({ repository, hookId }, deliveries);
}

export interface PaddleEventEntity {
  readonly event_id: string;
  readonly event_type: string;
  readonly occurred_at: string;
  readonly data: Record<string, unknown>;
}

/**
 * Paddle Billing's `GET /events` as documented: `order_by` (`id[ASC]` by default, or
 * `id[DESC]`), `per_page` (default 50, at most 200), `after` an id, and
 * `meta.pagination.{has_more,next}` with the next page's full URL. Ids sort by creation.
 */
export async function startFakePaddleEvents(events: readonly PaddleEventEntity[]): Promise<FakeApi> {
  const ascending = [...events].sort((a, b) => (a.event_id < b.event_id ? -1 : 1));
  let origin = '';
  const api = await listen((req, url) => {
    if (req.method !== 'GET' || url.pathname !== '/events') {
      return {
        status: 404,
        body: { error: { type: 'request_error', code: 'not_found', detail: 'Not found' } },
      };
    }
    const q = url.searchParams;
    const order = q.get('order_by') ?? 'id[ASC]';
    const sorted = order === 'id[DESC]' ? [...ascending].reverse() : ascending;
    const perPage = Math.min(Number(q.get('per_page') ?? '50'), 200);
    const after = q.get('after');
    const start = after ? sorted.findIndex((event) => event.event_id === after) + 1 : 0;
    const data = sorted.slice(start, start + perPage);
    const hasMore = start + perPage < sorted.length;
    const next = new URL(`${origin}/events`);
    next.searchParams.set('order_by', order);
    next.searchParams.set('per_page', String(perPage));
    if (data.length > 0) next.searchParams.set('after', data.at(-1)!.event_id);
    return {
      status: 200,
      body: {
        data,
        meta: {
          request_id: 'req_fake',
          pagination: {
            per_page: perPage,
            next: next.toString(),
            has_more: hasMore,
            estimated_total: sorted.length,
          },
        },
      },
    };
  });
  origin = api.url;
  return api;
}
