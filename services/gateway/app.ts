import express, { type ErrorRequestHandler, type Request, type Response } from 'express';
import type { Logger } from '../core/logging.ts';
import type { GatewayMetrics } from '../core/metrics.ts';
import type { HeaderBag } from '../core/providers/types.ts';
import { activeTraceId } from '../core/tracing.ts';
import type { Endpoint } from './endpoints.ts';
import { type Answer, type ReceiveDeps, receive, refuse } from './receive.ts';

export interface GatewayAppDeps extends ReceiveDeps {
  readonly endpoints: ReadonlyMap<string, Endpoint>;
  readonly bodyLimit: number;
  readonly metrics: GatewayMetrics;
  readonly logger: Logger;
  /** Null when ready, else the reason. */
  readonly readiness: () => Promise<string | null>;
  readonly shuttingDown: () => boolean;
}

function headerBag(req: Request): HeaderBag {
  const bag: Record<string, string> = {};
  for (const [name, value] of Object.entries(req.headers)) {
    if (typeof value === 'string') bag[name] = value;
    else if (Array.isArray(value)) bag[name] = value.join(', ');
  }
  return bag;
}

// Labels stay bounded: a path naming no endpoint is counted under one label.
const UNKNOWN_ENDPOINT = '(unknown)';

export function createGatewayApp(deps: GatewayAppDeps): express.Express {
  const app = express();
  app.disable('x-powered-by');
  app.set('etag', false);

  const answer = (res: Response, endpoint: Endpoint | undefined, started: bigint, result: Answer): void => {
    const name = endpoint?.name ?? UNKNOWN_ENDPOINT;
    deps.metrics.deliveries.inc({
      endpoint: name,
      provider: endpoint?.provider.name ?? '',
      outcome: result.outcome,
    });
    deps.metrics.ackDuration.observe(
      { endpoint: name, outcome: result.outcome },
      Number(process.hrtime.bigint() - started) / 1e9,
    );
    const line = {
      endpoint: name,
      outcome: result.outcome,
      status: result.status,
      event_id: result.eventId,
      ...(result.cause ? { cause: result.cause } : {}),
      trace_id: activeTraceId(),
    };
    if (result.status >= 500) deps.logger.warn(line, 'delivery not accepted');
    else deps.logger.info(line, 'delivery answered');
    if (result.status === 503) res.setHeader('Retry-After', '5');
    // Written directly: Express's res.json() adds content negotiation work the hot path does not need.
    const payload = JSON.stringify(result.body);
    res.writeHead(result.status, {
      'content-type': 'application/json; charset=utf-8',
      'content-length': Buffer.byteLength(payload),
    });
    res.end(payload);
  };

  const rawBody = express.raw({ type: () => true, limit: deps.bodyLimit });

  app.post(
    '/webhooks/:endpoint',
    (req, res, next) => {
      res.locals.started = process.hrtime.bigint();
      const endpoint = deps.endpoints.get(req.params.endpoint);
      if (!endpoint) {
        answer(
          res,
          undefined,
          res.locals.started,
          refuse('endpoint_unknown', 'No endpoint with that name is configured.'),
        );
        return;
      }
      if (deps.shuttingDown()) {
        answer(
          res,
          endpoint,
          res.locals.started,
          refuse('shutting_down', 'This instance is shutting down; retry.'),
        );
        return;
      }
      res.locals.endpoint = endpoint;
      next();
    },
    rawBody,
    async (req, res) => {
      const endpoint = res.locals.endpoint as Endpoint;
      const body = Buffer.isBuffer(req.body) ? req.body : Buffer.alloc(0);
      answer(res, endpoint, res.locals.started, await receive(deps, endpoint, body, headerBag(req)));
    },
  );

  app.get('/healthz', (_req, res) => {
    res.json({ status: 'ok' });
  });

  app.get('/readyz', async (_req, res) => {
    if (deps.shuttingDown()) {
      res.status(503).json({ status: 'shutting_down' });
      return;
    }
    const reason = await deps.readiness();
    if (reason) res.status(503).json({ status: 'not_ready', reason });
    else res.json({ status: 'ready' });
  });

  const bodyErrors: ErrorRequestHandler = (error: { type?: string; status?: number }, _req, res, next) => {
    const endpoint = res.locals.endpoint as Endpoint | undefined;
    const started = (res.locals.started as bigint | undefined) ?? process.hrtime.bigint();
    if (res.headersSent) return next(error);
    if (error.type === 'entity.too.large') {
      answer(
        res,
        endpoint,
        started,
        refuse('body_too_large', `The body exceeds the limit of ${deps.bodyLimit} bytes.`),
      );
    } else if (error.status && error.status < 500) {
      answer(res, endpoint, started, refuse('body_unreadable', 'The request body could not be read.'));
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
  app.use(bodyErrors);
  return app;
}
