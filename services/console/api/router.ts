import express, { type NextFunction, type Request, type Response } from 'express';
import { sourceOf } from '../../core/client-source.ts';
import { type ActionContext, type ApiAction, actionRoute } from './action-runner.ts';
import {
  pauseDestinationAction,
  redeliverDelivery,
  redeliverDestination,
  resumeDestinationAction,
} from './actions/destinations.ts';
import { pauseEndpointAction, resumeEndpointAction } from './actions/endpoints.ts';
import { discardEvent, discardEvents, requeueEvent, requeueEvents } from './actions/events.ts';
import { dropQuarantinedAction, releaseQuarantinedAction } from './actions/quarantine.ts';
import { startReconcileAction } from './actions/reconcile.ts';
import { identifyCaller, requireOperatorCaller, setCaller } from './caller.ts';
import type { ApiContext } from './context.ts';
import { openApiDocument } from './document.ts';
import { ApiProblem, problemBody, problemOf, sendProblemBody } from './problems.ts';
import { listAudit } from './reads/audit.ts';
import { getDelivery, listDeliveriesRoute } from './reads/deliveries.ts';
import { listDestinations } from './reads/destinations.ts';
import { getStats, listEndpoints } from './reads/endpoints.ts';
import { getEvent, listEvents } from './reads/events.ts';
import { getMe, listTokens } from './reads/meta.ts';
import { getQuarantined, listQuarantine } from './reads/quarantine.ts';
import { getReconcileStatus } from './reads/reconcile.ts';

type Read = (context: ApiContext, req: Request, res: Response) => Promise<void>;

/** Body-parser's refusals as the catalogue's codes. */
function bodyProblem(error: unknown, limitBytes: number): ApiProblem | null {
  const type = (error as { type?: unknown }).type;
  if (type === 'entity.too.large')
    return new ApiProblem(
      'body_too_large',
      `The body is larger than ${limitBytes} bytes (console.api.maxBodyBytes).`,
    );
  if (type === 'entity.parse.failed')
    return new ApiProblem('request_malformed', 'The body is not valid JSON.');
  if (type === 'encoding.unsupported' || type === 'charset.unsupported')
    return new ApiProblem('media_type_unsupported', 'The body must be JSON in UTF-8 (application/json).');
  return null;
}

/**
 * /api/v1 (docs/api.md, the contract: openapi.yaml beside this file). Every route but the
 * document needs a caller (a bearer token, or the loopback demo); each token is held to
 * console.api.rateLimit requests a minute; actions need an operator, an Idempotency-Key and a JSON
 * body of at most console.api.maxBodyBytes (or none).
 */
export function createApiRouter(context: ApiContext): express.Router {
  const router = express.Router();
  const api = context.config.console.api;
  const document = openApiDocument();
  const actions: ActionContext = {
    pool: context.pool,
    boss: context.boss,
    config: context.config,
    endpoints: context.endpoints,
    logger: context.logger,
    queryTimeoutMs: context.queryTimeoutMs,
    idempotencyTtlMs: api.idempotencyTtl,
    now: context.now,
  };
  const json = express.json({ limit: api.maxBodyBytes, strict: true, type: () => true });
  const body = (req: Request, res: Response, next: NextFunction): void => {
    const hasBody =
      (req.headers['content-length'] !== undefined && req.headers['content-length'] !== '0') ||
      req.headers['transfer-encoding'] !== undefined;
    if (!hasBody) {
      req.body = {};
      next();
      return;
    }
    if (!/^application\/([a-z0-9.+-]*\+)?json\s*(;|$)/i.test(req.headers['content-type'] ?? '')) {
      next(
        new ApiProblem(
          'media_type_unsupported',
          'A request body must be JSON (Content-Type: application/json).',
        ),
      );
      return;
    }
    json(req, res, next);
  };
  const read = (handler: Read) => (req: Request, res: Response) => handler(context, req, res);
  const act = <Body>(action: ApiAction<Body>) => {
    const route = actionRoute(actions, action);
    return [requireOperatorCaller, body, (req: Request, res: Response) => route(req, res)];
  };

  router.get('/openapi.json', (_req, res) => {
    res.json(document);
  });
  router.use((req: Request, _res: Response, next: NextFunction) => {
    const caller = identifyCaller(context.settings, req);
    const now = context.now();
    const taken = context.limiter.take(caller.name, now);
    if (!taken.ok) {
      throw new ApiProblem(
        'rate_limited',
        `The token ${caller.name} sent more than ${api.rateLimit} requests in a minute to this console (console.api.rateLimit): wait ${taken.retryAfterSeconds}s.`,
        { 'Retry-After': String(taken.retryAfterSeconds) },
      );
    }
    setCaller(req, caller);
    if (caller.via === 'token') {
      const forwarded = req.headers['x-forwarded-for'];
      context.tokenUse.touch(
        caller.name,
        sourceOf(
          req.socket.remoteAddress,
          Array.isArray(forwarded) ? forwarded.join(',') : forwarded,
          context.settings.config.trustedProxyHops,
        ),
        now,
      );
    }
    next();
  });

  router.get('/me', read(getMe));
  router.get('/tokens', read(listTokens));
  router.get('/endpoints', read(listEndpoints));
  router.post('/endpoints/:endpoint/pause', ...act(pauseEndpointAction));
  router.post('/endpoints/:endpoint/resume', ...act(resumeEndpointAction));
  router.post('/endpoints/:endpoint/requeue', ...act(requeueEvents));
  router.post('/endpoints/:endpoint/discard', ...act(discardEvents));
  router.post('/endpoints/:endpoint/reconcile', ...act(startReconcileAction));
  router.get('/stats', read(getStats));
  router.get('/events', read(listEvents));
  router.get('/events/:endpoint/:event_id', read(getEvent));
  router.post('/events/:endpoint/:event_id/requeue', ...act(requeueEvent));
  router.post('/events/:endpoint/:event_id/discard', ...act(discardEvent));
  router.get('/deliveries', read(listDeliveriesRoute));
  router.get('/deliveries/:delivery_id', read(getDelivery));
  router.post('/deliveries/:delivery_id/redeliver', ...act(redeliverDelivery));
  router.get('/destinations', read(listDestinations));
  router.post('/destinations/:endpoint/:destination/pause', ...act(pauseDestinationAction));
  router.post('/destinations/:endpoint/:destination/resume', ...act(resumeDestinationAction));
  router.post('/destinations/:endpoint/:destination/redeliver', ...act(redeliverDestination));
  router.get('/quarantine', read(listQuarantine));
  router.get('/quarantine/:quarantine_id', read(getQuarantined));
  router.post('/quarantine/:quarantine_id/release', ...act(releaseQuarantinedAction));
  router.post('/quarantine/:quarantine_id/drop', ...act(dropQuarantinedAction));
  router.get('/audit', read(listAudit));
  router.get('/reconcile', read(getReconcileStatus));

  router.use((req: Request, res: Response) => {
    sendProblemBody(
      res,
      problemBody(
        'not_found',
        `No API route ${req.method} ${req.path} (GET /api/v1/openapi.json lists them).`,
        req.originalUrl,
      ),
    );
  });
  router.use((error: unknown, req: Request, res: Response, _next: NextFunction) => {
    const problem = problemOf(bodyProblem(error, api.maxBodyBytes) ?? error, context, req.originalUrl);
    sendProblemBody(res, problem.body, problem.headers);
  });
  return router;
}
