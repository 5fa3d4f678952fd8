import { type IncomingHttpHeaders, type IncomingMessage, type ServerResponse, STATUS_CODES } from 'node:http';
import type { Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import express, { type ErrorRequestHandler } from 'express';
import { sourceOf } from '../core/client-source.ts';
import type { Logger } from '../core/logging.ts';
import type { GatewayMetrics } from '../core/metrics.ts';
import type { HeaderBag } from '../core/providers/types.ts';
import { activeTraceId } from '../core/tracing.ts';
import type { BodyBudget } from './body-budget.ts';
import type { Endpoint } from './endpoints.ts';
import { answersMethod, handshakeAnswer } from './handshake.ts';
import { readBody } from './read-body.ts';
import { type Answer, type ReceiveDeps, receive, refuse } from './receive.ts';
import { RefusalLog } from './refusal-log.ts';
import { REPLAY_TOKEN_HEADER } from './replay-token.ts';

export interface GatewayAppDeps extends ReceiveDeps {
  readonly endpoints: ReadonlyMap<string, Endpoint>;
  /** Bounds the body bytes held at once (server.maxBufferedBytes); absent, unbounded. */
  readonly bodyBudget?: BodyBudget;
  readonly metrics: GatewayMetrics;
  readonly logger: Logger;
  /** Null when ready, else the reason. */
  readonly readiness: () => Promise<string | null>;
  /** Longest /readyz waits for `readiness` before answering not ready (probes time out in 1–5 s). */
  readonly readinessTimeoutMs?: number;
  /** Draining for a shutdown: /readyz says so; deliveries are still served (see drain.ts). */
  readonly shuttingDown: () => boolean;
  /**
   * Handle `POST /webhooks/<name>` from the request listener, skipping Express's router. Off
   * when tracing is on, so Express's instrumentation still sees (and spans) every request.
   */
  readonly direct?: boolean;
  /** X-Forwarded-For entries to trust (proxies in front of the gateway); 0 trusts none. */
  readonly trustedProxyHops?: number;
  /**
   * Longest a delivery waits for its answer, from its first byte (server.requestTimeout): past it
   * a claim still running is answered 503 and left to finish. Absent, no deadline.
   */
  readonly answerWithinMs?: number;
}

/** Resolves with `work`'s result, or with null once `ms` have passed (it keeps running). */
async function within<T>(work: Promise<T>, ms: number): Promise<T | null> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<null>((resolve) => {
    timer = setTimeout(() => resolve(null), Math.max(0, ms));
  });
  try {
    return await Promise.race([work, late]);
  } finally {
    clearTimeout(timer);
  }
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

function headerBag(headers: IncomingHttpHeaders): HeaderBag {
  const bag: Record<string, string> = {};
  for (const name in headers) {
    const value = headers[name];
    if (typeof value === 'string') bag[name] = value;
    else if (Array.isArray(value)) bag[name] = value.join(', ');
  }
  return bag;
}

/**
 * The webhook path in its one canonical spelling (endpoint names are validated to this shape).
 * Anything else — other case, a trailing slash, a query, percent-escapes — goes through Express.
 */
const WEBHOOK_PATH = /^\/webhooks\/([a-z0-9][a-z0-9_-]{0,62})$/;

// Labels stay bounded: a path naming no endpoint is counted under one label.
const UNKNOWN_ENDPOINT = '(unknown)';

export const READINESS_TIMEOUT_MS = 2_000;

interface InFlight {
  readonly res: ServerResponse;
  readonly endpoint: Endpoint;
  readonly started: bigint;
}

/** Refused before its body is read: the gateway holds as many body bytes as it may. */
const overloaded = (): Answer =>
  refuse(
    'overloaded',
    'Too many deliveries are waiting to be stored; this one was not accepted. Retry later.',
  );

/** A delivery the client gave up on: nobody is left to answer, but it is counted. */
const CLIENT_ABORTED = 'client_aborted';

export function createGatewayApp(deps: GatewayAppDeps): GatewayApp {
  const app = express();
  app.disable('x-powered-by');
  app.set('etag', false);
  const refusals = new RefusalLog(deps.logger);
  // The response of each webhook request still being read, so a request timeout can be
  // answered (and counted) through it rather than behind its back.
  const inFlight = new WeakMap<Duplex, InFlight>();

  /** Bytes of each body read, for its delivery line. */
  const bodySizes = new WeakMap<IncomingMessage, number>();
  /** Who sent it and how much: the socket's peer (and X-Forwarded-For as given), user agent, body bytes. */
  const requestFields = (req: IncomingMessage | undefined) => {
    if (!req) return {};
    const forwarded = req.headers['x-forwarded-for'];
    const agent = req.headers['user-agent'];
    const declared = Number(req.headers['content-length'] ?? Number.NaN);
    return {
      source: req.socket?.remoteAddress?.replace(/^::ffff:(?=\d+\.\d+\.\d+\.\d+$)/i, ''),
      forwarded_for: typeof forwarded === 'string' ? forwarded.slice(0, 200) : undefined,
      user_agent: typeof agent === 'string' ? agent.slice(0, 200) : undefined,
      body_bytes: bodySizes.get(req) ?? (Number.isFinite(declared) ? declared : undefined),
    };
  };

  // The per-delivery line carries only the fixed fields below, all strings or numbers: none can
  // hold a secret, and no redaction path can match them, so this logger skips pino's redaction,
  // which otherwise runs over every field of every line (a wildcard path) — the line is the same.
  const deliveryLog = deps.logger.child({}, { redact: [] });

  const record = (
    endpoint: Endpoint | undefined,
    started: bigint,
    result: Answer,
    req?: IncomingMessage,
  ): void => {
    const name = endpoint?.name ?? UNKNOWN_ENDPOINT;
    deps.metrics.deliveries.inc({
      endpoint: name,
      provider: endpoint?.provider.name ?? '',
      outcome: result.outcome,
    });
    const seconds = Number(process.hrtime.bigint() - started) / 1e9;
    deps.metrics.ackDuration.observe({ endpoint: name, outcome: result.outcome }, seconds);
    // Undefined fields are left out of the line by pino.
    const line = {
      endpoint: name,
      outcome: result.outcome,
      status: result.status,
      event_id: result.eventId,
      cause: result.cause || undefined,
      trace_id: activeTraceId(),
      ...result.note,
      ...requestFields(req),
      duration_ms: Math.round(seconds * 1e6) / 1e3,
    };
    if (result.status >= 500) deliveryLog.warn(line, 'delivery not accepted');
    else if (result.status >= 300 || result.status === 0) refusals.record(line);
    else deliveryLog.info(line, 'delivery answered');
  };

  /**
   * `close`: the connection ends after the answer instead of Node reading (and discarding)
   * whatever body the client still sends — for a 100 GB Content-Length, that is 100 GB.
   */
  const answer = (
    res: ServerResponse,
    endpoint: Endpoint | undefined,
    started: bigint,
    result: Answer,
    close = false,
  ): void => {
    record(endpoint, started, result, res.req);
    // Answered before the body was read (unknown endpoint, wrong method, ...): the same rule.
    const closing = close || !res.req?.complete;
    if (result.status === 503) res.setHeader('Retry-After', '5');
    if (result.status === 405) res.setHeader('Allow', 'POST');
    if (result.retryAfter !== undefined) res.setHeader('Retry-After', String(result.retryAfter));
    for (const [name, value] of Object.entries(result.headers ?? {})) res.setHeader(name, value);
    // Written directly: Express's res.json() adds content negotiation work the hot path does not need.
    // A handshake's answer may be bare text, or nothing at all (a 204, or a body it leaves out).
    const payload =
      result.text ?? (result.status === 204 || result.body === undefined ? '' : JSON.stringify(result.body));
    res.writeHead(result.status, {
      ...(result.status === 204
        ? {}
        : {
            'content-type':
              result.text === undefined ? 'application/json; charset=utf-8' : 'text/plain; charset=utf-8',
            'content-length': Buffer.byteLength(payload),
          }),
      ...(closing ? { connection: 'close' } : {}),
    });
    if (closing) {
      const socket = res.socket;
      res.on('finish', () => socket?.destroy());
    }
    res.end(payload);
  };

  /** What a body that could not be read is answered (shared by both routes). */
  const bodyFailure = (
    error: { type?: string; status?: number } | URIError,
    res: ServerResponse,
    endpoint: Endpoint | undefined,
    started: bigint,
  ): void => {
    const type = 'type' in error ? error.type : undefined;
    const status = 'status' in error ? error.status : undefined;
    if (type === 'entity.too.large' && endpoint) {
      answer(
        res,
        endpoint,
        started,
        refuse('body_too_large', `The body exceeds this endpoint's limit of ${endpoint.bodyLimit} bytes.`),
        true,
      );
    } else if (type === 'encoding.unsupported') {
      answer(
        res,
        endpoint,
        started,
        refuse('encoding_unsupported', 'Compressed bodies are not accepted; send the body as signed.'),
        true,
      );
    } else if (type === 'budget.exceeded') {
      answer(res, endpoint, started, overloaded(), true);
    } else if (type === 'request.aborted') {
      // The client went away (or the request timed out and was answered 408 already).
      record(endpoint, started, { status: 0, outcome: CLIENT_ABORTED, body: null }, res.req);
    } else if (error instanceof URIError || (endpoint === undefined && status === 400)) {
      // `/webhooks/%zz`: a name that cannot be decoded names no endpoint.
      answer(
        res,
        undefined,
        started,
        refuse('endpoint_unknown', 'No endpoint with that name is configured.'),
      );
    } else if (status && status < 500) {
      answer(res, endpoint, started, refuse('body_unreadable', 'The request body could not be read.'), true);
    } else {
      deps.logger.error({ err: error }, 'unexpected error');
      answer(
        res,
        endpoint,
        started,
        refuse('database_unavailable', 'The delivery could not be processed; retry.'),
      );
    }
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
    // Reserved before the body is read (a declared length up front; a body over the endpoint's limit is
    // refused by readBody, unreserved; a chunked one as it comes) and given back once both the
    // answer is out (or the client gone) and this delivery's work is done: a client that leaves
    // while its claim waits does not take its body out of the claim queue.
    const budget = deps.bodyBudget;
    let held = 0;
    let grow: ((bytes: number) => boolean) | undefined;
    if (budget) {
      const declared = Number(req.headers['content-length'] ?? Number.NaN);
      if (Number.isFinite(declared) && declared >= 0) {
        if (declared <= endpoint.bodyLimit) {
          if (!budget.reserve(declared)) {
            answer(res, endpoint, started, overloaded(), true);
            return;
          }
          held = declared;
          deps.metrics.bufferedBytes.set(budget.held);
        }
      } else {
        grow = (bytes) => {
          if (!budget.reserve(bytes)) return false;
          held += bytes;
          deps.metrics.bufferedBytes.set(budget.held);
          return true;
        };
      }
    }
    /** Two holders, the response and this function; the last to let go gives the bytes back. */
    let holders = 2;
    const letGo = (): void => {
      holders -= 1;
      if (holders > 0 || !budget || held === 0) return;
      budget.release(held);
      held = 0;
      deps.metrics.bufferedBytes.set(budget.held);
    };
    const socket = req.socket;
    inFlight.set(socket, { res, endpoint, started });
    res.once('close', () => {
      if (inFlight.get(socket)?.res === res) inFlight.delete(socket);
      // Answered (408) or gone before its body was complete: stop reading it. A request the
      // server timed out gets no 'close' of its own, and readBody would wait for ever.
      if (!req.complete) req.destroy();
      letGo();
    });
    try {
      let body: Buffer;
      try {
        body = await readBody(req, endpoint.bodyLimit, grow);
        bodySizes.set(req, body.length);
      } catch (error) {
        if (res.headersSent) return;
        bodyFailure(error as { type?: string }, res, endpoint, started);
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
      letGo();
    }
  };

  app.post('/webhooks/:endpoint', (req, res, next) => {
    const started = process.hrtime.bigint();
    res.locals.started = started;
    const endpoint = deps.endpoints.get(String(req.params.endpoint));
    if (!endpoint) {
      answer(
        res,
        undefined,
        started,
        refuse('endpoint_unknown', 'No endpoint with that name is configured.'),
      );
      return;
    }
    res.locals.endpoint = endpoint;
    webhook(req, res, endpoint, started).catch(next);
  });

  app.all('/webhooks/:endpoint', (req, res) => {
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

  app.get('/healthz', (_req, res) => {
    res.json({ status: 'ok' });
  });

  // One check at a time: probes arriving while the database hangs share it instead of piling up.
  let readinessCheck: Promise<string | null> | null = null;
  const readinessTimeoutMs = deps.readinessTimeoutMs ?? READINESS_TIMEOUT_MS;
  app.get('/readyz', async (_req, res) => {
    if (deps.shuttingDown()) {
      res.status(503).json({ status: 'shutting_down' });
      return;
    }
    readinessCheck ??= deps.readiness().finally(() => {
      readinessCheck = null;
    });
    let timer: NodeJS.Timeout | undefined;
    const timedOut = new Promise<string>((resolve) => {
      timer = setTimeout(
        () => resolve(`database did not answer within ${readinessTimeoutMs} ms`),
        readinessTimeoutMs,
      );
    });
    const reason = await Promise.race([readinessCheck, timedOut]);
    clearTimeout(timer);
    if (reason) res.status(503).json({ status: 'not_ready', reason });
    else res.json({ status: 'ready' });
  });

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
    bodyFailure(error, res, endpoint, started);
  };
  app.use(bodyErrors);

  const rawAnswer = (socket: Duplex, result: Answer): void => {
    const payload = JSON.stringify(result.body);
    socket.end(
      `HTTP/1.1 ${result.status} ${STATUS_CODES[result.status] ?? ''}\r\ncontent-type: application/json; charset=utf-8\r\n` +
        `content-length: ${Buffer.byteLength(payload)}\r\nconnection: close\r\n\r\n${payload}`,
      () => socket.destroy(),
    );
  };

  const onClientError = (error: NodeJS.ErrnoException, socket: Duplex): void => {
    const code = error.code ?? '';
    let result: Answer | null = null;
    if (code === 'ERR_HTTP_REQUEST_TIMEOUT') {
      result = refuse('request_timeout', 'The request was not received in time.');
      const pending = inFlight.get(socket);
      if (pending && !pending.res.headersSent) {
        inFlight.delete(socket);
        answer(pending.res, pending.endpoint, pending.started, result, true);
        return;
      }
    } else if (code === 'HPE_HEADER_OVERFLOW') {
      result = refuse('headers_too_large', 'The request headers exceed the limit.');
    } else if (code.startsWith('HPE_')) {
      result = refuse('request_malformed', 'The request is not valid HTTP/1.1.');
    }
    const writable = (socket as Socket).writable && !inFlight.get(socket)?.res.headersSent;
    if (result === null || !writable) {
      socket.destroy();
      return;
    }
    record(undefined, process.hrtime.bigint(), result);
    rawAnswer(socket, result);
  };

  const direct = deps.direct ?? true;
  const listener = (req: IncomingMessage, res: ServerResponse): void => {
    if (direct && req.method === 'POST') {
      const match = WEBHOOK_PATH.exec(req.url ?? '');
      const endpoint = match ? deps.endpoints.get(match[1]!) : undefined;
      if (endpoint) {
        webhook(req, res, endpoint, process.hrtime.bigint()).catch((error: unknown) => {
          deps.logger.error({ err: error }, 'unexpected error');
          if (!res.headersSent) res.destroy();
        });
        return;
      }
    }
    app(req, res);
  };

  return { app, listener, onClientError, stop: () => refusals.flush() };
}
