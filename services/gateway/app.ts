import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Duplex } from 'node:stream';
import express, { type ErrorRequestHandler } from 'express';
import { sourceOf } from '../core/client-source.ts';
import type { Logger } from '../core/logging.ts';
import type { GatewayMetrics } from '../core/metrics.ts';
import { serveInSpan } from '../core/tracing.ts';
import { createAnswering, headerBag } from './answer.ts';
import type { BodyBudget } from './body-budget.ts';
import { reserveBody } from './body-reservation.ts';
import { createClientErrorListener, type InFlight } from './client-errors.ts';
import type { Endpoint } from './endpoints.ts';
import { answersMethod, handshakeAnswer } from './handshake.ts';
import { mountProbes, type ProbeDeps } from './probes.ts';
import { readBody } from './read-body.ts';
import { type ReceiveDeps, receive, refuse } from './receive.ts';
import { bodyFailure, CLIENT_ABORTED, endpointUnknown, overloaded } from './refusals.ts';
import { REPLAY_TOKEN_HEADER } from './replay-token.ts';

// The gateway's HTTP surface, composed: the webhook path (read, verify, claim, answer), the
// probes, the JSON refusals for everything else, and Node's client errors.

export interface GatewayAppDeps extends ReceiveDeps, ProbeDeps {
  readonly endpoints: ReadonlyMap<string, Endpoint>;
  /** Bounds the body bytes held at once (server.maxBufferedBytes); absent, unbounded. */
  readonly bodyBudget?: BodyBudget;
  readonly metrics: GatewayMetrics;
  readonly logger: Logger;
  /** X-Forwarded-For entries to trust (proxies in front of the gateway); 0 trusts none. */
  readonly trustedProxyHops?: number;
  /**
   * Longest a delivery waits for its answer, from its first byte (server.requestTimeout): past it
   * a claim still running is answered 503 and left to finish. Absent, no deadline.
   */
  readonly answerWithinMs?: number;
}

export interface GatewayApp {
  readonly app: express.Express;
  /**
   * The HTTP server's request listener: `POST /webhooks/<name>` of a configured endpoint is
   * handled directly, everything else by the Express app.
   */
  readonly listener: (req: IncomingMessage, res: ServerResponse) => void;
  /** The HTTP server's `clientError` listener: timeouts and unparsable requests, answered in JSON and counted. */
  readonly onClientError: (error: NodeJS.ErrnoException, socket: Duplex) => void;
  /** Writes the last refusal summary. */
  readonly stop: () => void;
}

/**
 * The webhook path in its one canonical spelling (endpoint names are validated to this shape).
 * Anything else — other case, a trailing slash, a query, percent-escapes — goes through Express.
 */
const WEBHOOK_PATH = /^\/webhooks\/([a-z0-9][a-z0-9_-]{0,62})$/;
const WEBHOOK_ROUTE = '/webhooks/:endpoint';

/**
 * Resolves with `work`'s result, or with null once `ms` have passed (it keeps running). One
 * promise and one timer per delivery: Promise.race in an async function cost three more.
 */
function within<T>(work: Promise<T>, ms: number): Promise<T | null> {
  return new Promise<T | null>((resolve, reject) => {
    const timer = setTimeout(resolve, Math.max(0, ms), null);
    work.then(
      (value) => {
        clearTimeout(timer);
        resolve(value);
      },
      (error: unknown) => {
        clearTimeout(timer);
        reject(error);
      },
    );
  });
}

export function createGatewayApp(deps: GatewayAppDeps): GatewayApp {
  const app = express();
  app.disable('x-powered-by');
  app.set('etag', false);
  const answering = createAnswering(deps);
  const { answer } = answering;
  // The response of each webhook request still being read, so a request timeout can be
  // answered (and counted) through it rather than behind its back.
  const inFlight = new WeakMap<Duplex, InFlight>();

  /** What a body that could not be read is answered (shared by both routes). */
  const answerBodyFailure = (
    error: { type?: string; status?: number } | URIError,
    res: ServerResponse,
    endpoint: Endpoint | undefined,
    started: bigint,
  ): void => {
    const failure = bodyFailure(error, endpoint);
    if (failure.kind === 'aborted') {
      answering.record(endpoint, started, { status: 0, outcome: CLIENT_ABORTED, body: null }, res.req);
      return;
    }
    if (failure.kind === 'unexpected') {
      deps.logger.error({ err: error }, 'unexpected error');
      answer(res, endpoint, started, failure.answer);
      return;
    }
    answer(res, failure.endpoint, started, failure.answer, failure.close);
  };

  /**
   * One delivery to a configured endpoint: read, verify, claim, answer. Called straight from the
   * server's request listener for the canonical path (Express's routing and its request and
   * response decoration cost more per delivery than the rest of the JavaScript), and from the
   * Express route for other spellings of it.
   */
  const webhook = async (
    req: IncomingMessage,
    res: ServerResponse,
    endpoint: Endpoint,
    started: bigint,
  ): Promise<void> => {
    const budget = deps.bodyBudget;
    const reservation = reserveBody(budget, req.headers['content-length'], endpoint.bodyLimit, (held) =>
      deps.metrics.bufferedBytes.set(held),
    );
    if (reservation === null) {
      answer(res, endpoint, started, overloaded(), true);
      return;
    }
    const socket = req.socket;
    inFlight.set(socket, { res, endpoint, started });
    res.once('close', () => {
      if (inFlight.get(socket)?.res === res) inFlight.delete(socket);
      // Answered (408) or gone before its body was complete: stop reading it. A request the
      // server timed out gets no 'close' of its own, and readBody would wait for ever.
      if (!req.complete) req.destroy();
      reservation.letGo();
    });
    try {
      let body: Buffer;
      try {
        body = await readBody(req, endpoint.bodyLimit, reservation.grow);
        answering.noteBodySize(req, body.length);
      } catch (error) {
        if (res.headersSent) return;
        answerBodyFailure(error as { type?: string }, res, endpoint, started);
        return;
      }
      const headers = headerBag(req.headers);
      // Only a replay-token attempt needs its source; signed deliveries skip the work.
      const source =
        headers[REPLAY_TOKEN_HEADER] === undefined
          ? ''
          : sourceOf(req.socket.remoteAddress, headers['x-forwarded-for'], deps.trustedProxyHops ?? 0);
      const receiving = receive(deps, endpoint, body, headers, source);
      const left =
        deps.answerWithinMs === undefined
          ? undefined
          : deps.answerWithinMs - Number(process.hrtime.bigint() - started) / 1e6;
      const result = left === undefined ? await receiving : await within(receiving, left);
      if (result === null) {
        // PostgreSQL has not answered the claim in time (unreachable, or a statement stuck behind a
        // lock): the provider is told to retry rather than held past the bound. The claim runs on
        // and may still commit, which is safe (its retry is a duplicate, answered 200); its body
        // stays reserved until the claim ends.
        if (!res.headersSent && !res.destroyed) {
          answer(res, endpoint, started, {
            ...refuse('database_unavailable', 'The event could not be stored in time; retry later.'),
            cause: `claim_timeout: no answer from PostgreSQL within ${deps.answerWithinMs} ms of the request`,
          });
        }
        await receiving;
        return;
      }
      if (res.headersSent || res.destroyed) {
        // The request timed out (answered 408) or the client left while the claim ran.
        return;
      }
      answer(res, endpoint, started, result);
    } finally {
      reservation.letGo();
    }
  };

  app.post(WEBHOOK_ROUTE, (req, res, next) => {
    const started = process.hrtime.bigint();
    res.locals.started = started;
    const endpoint = deps.endpoints.get(String(req.params.endpoint));
    if (!endpoint) {
      answer(res, undefined, started, endpointUnknown());
      return;
    }
    res.locals.endpoint = endpoint;
    webhook(req, res, endpoint, started).catch(next);
  });

  app.all(WEBHOOK_ROUTE, (req, res) => {
    const endpoint = deps.endpoints.get(req.params.endpoint);
    // Dropbox and Okta check an endpoint with a GET: answered, nothing read or stored.
    if (answersMethod(endpoint, req.method)) {
      const query = req.originalUrl.includes('?')
        ? req.originalUrl.slice(req.originalUrl.indexOf('?') + 1)
        : '';
      const reply = handshakeAnswer(endpoint, req.method, headerBag(req.headers), query);
      if (reply) {
        answer(res, endpoint, process.hrtime.bigint(), reply);
        return;
      }
    }
    answer(
      res,
      endpoint,
      process.hrtime.bigint(),
      refuse('method_not_allowed', 'Webhook endpoints take POST only.'),
    );
  });

  mountProbes(app, deps);

  // Anything else: the same JSON refusal as the webhook path, counted, never echoing the path.
  app.use((_req, res) => {
    answer(res, undefined, process.hrtime.bigint(), refuse('not_found', 'Nothing is served at this path.'));
  });

  const bodyErrors: ErrorRequestHandler = (
    error: { type?: string; status?: number } | URIError,
    _req,
    res,
    next,
  ) => {
    const endpoint = res.locals.endpoint as Endpoint | undefined;
    const started = (res.locals.started as bigint | undefined) ?? process.hrtime.bigint();
    if (res.headersSent) return next(error);
    answerBodyFailure(error, res, endpoint, started);
  };
  app.use(bodyErrors);

  // One path for every delivery, traced or not: with tracing on it runs in an HTTP server span
  // named after the route (services/core/tracing.ts, serveInSpan).
  const listener = (req: IncomingMessage, res: ServerResponse): void => {
    if (req.method === 'POST') {
      const match = WEBHOOK_PATH.exec(req.url ?? '');
      const endpoint = match ? deps.endpoints.get(match[1]!) : undefined;
      if (endpoint) {
        const started = process.hrtime.bigint();
        serveInSpan(req, res, WEBHOOK_ROUTE, () => webhook(req, res, endpoint, started)).catch(
          (error: unknown) => {
            deps.logger.error({ err: error }, 'unexpected error');
            if (!res.headersSent) res.destroy();
          },
        );
        return;
      }
    }
    app(req, res);
  };

  return {
    app,
    listener,
    onClientError: createClientErrorListener(answering, inFlight),
    stop: () => answering.flush(),
  };
}
