import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type pg from 'pg';
import type { PgBoss } from 'pg-boss';
import { applyInClaim } from '../core/apply/apply-in-claim.ts';
import type { ApplyMetrics } from '../core/apply/metrics.ts';
import type { Config } from '../core/config/schema.ts';
import { routesFrom } from '../core/destinations/routes.ts';
import { HookgateError } from '../core/errors.ts';
import { createHandler } from '../core/handlers/index.ts';
import type { Handler } from '../core/handlers/types.ts';
import { type Claim, type ClaimHooks, type ClaimResult, claimBatch } from '../core/inbox/claim.ts';
import { GroupCommitOverloaded, GroupCommitter } from '../core/inbox/group-commit.ts';
import type { Logger } from '../core/logging.ts';
import type { GatewayMetrics } from '../core/metrics.ts';
import { readinessCheck } from '../core/migrate/readiness.ts';
import type { Provider, VerifyRequest } from '../core/providers/types.ts';
import { storeQuarantined } from '../core/quarantine/store.ts';
import { NOTIFY_ENDPOINTS, WAKEUP_CHANNEL } from '../core/queue/wakeup.ts';
import { WakeupThrottle } from '../core/queue/wakeup-throttle.ts';
import {
  deliveryParent,
  inSpan,
  inSpanSync,
  setOutcome,
  spanAttributes,
  traceparentOf,
  tracingEnabled,
} from '../core/tracing.ts';
import { createGatewayApp } from './app.ts';
import { BodyBudget } from './body-budget.ts';
import { trackConnections } from './drain.ts';
import { buildEndpoints, type Endpoint } from './endpoints.ts';
import { ReplayTokenLimiter } from './replay-limit.ts';

/** How often Node enforces the request and header timeouts on open connections. */
const CONNECTIONS_CHECKING_INTERVAL_MS = 500;

export interface GatewayOptions {
  readonly config: Config;
  readonly pool: pg.Pool;
  readonly boss: PgBoss;
  readonly logger: Logger;
  readonly metrics: GatewayMetrics;
  readonly port: number;
  readonly host?: string;
  readonly hooks?: ClaimHooks;
  /** Where sync-mode applies are counted (the worker's metrics, in the same registry). */
  readonly applyMetrics?: ApplyMetrics | null;
  readonly now?: () => number;
  /** Directory of the config file, for sync-mode `module:` handlers (default: cwd). */
  readonly configDir?: string;
  /** What /readyz checks (default: services/core/migrate/readiness.ts on this pool). */
  readonly readiness?: () => Promise<string | null>;
}

export interface RunningGateway {
  readonly port: number;
  /**
   * Stops accepting connections, finishes the open ones (everything they still send is served
   * and answered, each answer closing its connection), lets the claims commit, then returns; the
   * caller closes the pool.
   */
  stop(): Promise<void>;
}

export async function startGateway(options: GatewayOptions): Promise<RunningGateway> {
  const { config, pool, boss, logger, metrics } = options;

  // Sync-mode endpoints share the group committer's bounds (queue size, queue age, commit slots)
  // but are committed alone: each delivery is claimed and applied in its own transaction, so a
  // handler failure rolls back only that delivery (answered 5xx).
  const syncHandlers = new Map<string, Handler>();
  for (const [name, endpoint] of Object.entries(config.endpoints)) {
    if (endpoint.mode !== 'sync') continue;
    syncHandlers.set(
      name,
      await createHandler(endpoint.handler, endpoint.options, {
        endpoint: name,
        logger: logger.child({ endpoint: name }),
        configDir: options.configDir ?? process.cwd(),
      }),
    );
  }
  const engine = { boss, logger, metrics: options.applyMetrics ?? null, destinations: routesFrom(config) };
  const syncHooks: ClaimHooks = {
    beforeCommit: async (client, accepted) => {
      await options.hooks?.beforeCommit?.(client, accepted);
      await applyInClaim(client, engine, syncHandlers, accepted);
    },
    appliesInClaim: (endpoint) => syncHandlers.has(endpoint),
  };
  const isSync = (claim: Claim): boolean => syncHandlers.has(claim.endpoint);

  const wakeups = new WakeupThrottle({
    intervalMs: config.claim.wakeupInterval,
    send: async (endpoints) => {
      await pool.query(NOTIFY_ENDPOINTS, [WAKEUP_CHANNEL, endpoints]);
    },
    onError: (error) => logger.warn({ err: error }, 'workers not woken; they find the events by polling'),
  });
  const commitClaims = async (claims: readonly Claim[]): Promise<ClaimResult[]> => {
    // A sync claim is always a batch of one (`alone`).
    const hooks = claims.length === 1 && isSync(claims[0]!) ? syncHooks : options.hooks;
    const wakeup = wakeups.take(new Set(claims.map((claim) => claim.endpoint)));
    const results = await claimBatch(pool, boss, claims, hooks, {
      wakeup,
      eventsPerJob: config.worker.batchSize,
    });
    if (!wakeup) {
      const accepted = new Set<string>();
      results.forEach((result, index) => {
        if (result.ok && result.outcome === 'accepted') accepted.add(claims[index]!.endpoint);
      });
      if (accepted.size > 0) wakeups.owe(accepted);
    }
    return results;
  };
  const committer = new GroupCommitter<Claim, ClaimResult>({
    maxBatch: config.claim.maxBatch,
    maxWaitMs: config.claim.maxWait,
    concurrency: config.claim.concurrency,
    commit: commitClaims,
    alone: isSync,
    onBatch: (size) => metrics.claimBatchSize.observe(size),
    maxQueued: config.claim.maxQueued,
    // A claim statement carries its deliveries' bodies (server.maxBufferedBytes bounds the
    // bodies waiting: BodyBudget).
    size: (claim) => Buffer.byteLength(claim.body),
    maxBatchSize: config.claim.maxBatchBytes,
    // A delivery still waiting when its request would time out is refused, not committed late.
    maxQueueAgeMs: config.server.requestTimeout,
  });
  const submit = (claim: Claim): Promise<ClaimResult> =>
    committer.submit(claim).catch(
      (error: unknown): ClaimResult => ({
        ok: false,
        error:
          error instanceof GroupCommitOverloaded
            ? new HookgateError('overloaded', error.message)
            : new HookgateError('database_unavailable', 'The claim failed unexpectedly.', { cause: error }),
      }),
    );

  // webhook.claim: its own traceparent is what the inbox row stores, so the worker's apply span
  // continues this trace (without tracing, the delivery's own traceparent header is kept).
  const plainClaim = submit;
  const tracedClaim = (claim: Claim): Promise<ClaimResult> =>
    inSpan(
      'webhook.claim',
      spanAttributes({ endpoint: claim.endpoint, event_id: claim.event.eventId }),
      async (span) => {
        const result = await plainClaim({ ...claim, traceparent: traceparentOf(span) ?? claim.traceparent });
        if (result.ok) setOutcome(span, result.outcome);
        else setOutcome(span, result.error.code, result.error.message);
        return result;
      },
      deliveryParent(claim.traceparent),
    );
  const claim = tracingEnabled() ? tracedClaim : plainClaim;

  const gatewayApp = createGatewayApp({
    endpoints: tracingEnabled() ? withVerifySpans(buildEndpoints(config)) : buildEndpoints(config),
    answerWithinMs: config.server.requestTimeout,
    bodyBudget: new BodyBudget(config.server.maxBufferedBytes),
    metrics,
    logger,
    claim,
    // Its own autocommit statement: the 200 waits for it, as an accepted delivery's waits for its claim.
    quarantine: async (entry) =>
      (await storeQuarantined(pool, [entry], config.quarantine.maxHeldPerEndpoint))[0] ?? 'stored',
    now: options.now ?? Date.now,
    shuttingDown: () => drain.draining,
    trustedProxyHops: config.server.trustedProxyHops,
    replayLimiter: new ReplayTokenLimiter({
      maxFailures: config.server.replayTokenLimit.maxFailures,
      windowMs: config.server.replayTokenLimit.window,
      maxSources: config.server.replayTokenLimit.maxSources,
    }),
    readiness: options.readiness ?? readinessCheck(pool, { logger }),
  });

  const server: Server = createServer(
    {
      maxHeaderSize: config.server.headerLimit,
      requestTimeout: config.server.requestTimeout,
      headersTimeout: Math.min(config.server.requestTimeout, 60_000),
      // Node checks both timeouts only this often (30 s by default): a slow client would be held
      // up to 30 s past its limit.
      connectionsCheckingInterval: CONNECTIONS_CHECKING_INTERVAL_MS,
    },
    gatewayApp.listener,
  );
  server.keepAliveTimeout = 65_000;
  server.on('clientError', gatewayApp.onClientError);
  const drain = trackConnections(server);
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port, options.host ?? '0.0.0.0', () => resolve());
  });
  const port = (server.address() as AddressInfo).port;
  logger.info({ port, endpoints: Object.keys(config.endpoints) }, 'gateway listening');

  return {
    port,
    async stop() {
      const { outcome, cut } = await drain.drain(config.server.shutdownTimeout);
      if (outcome === 'timed_out') {
        logger.warn(
          { connections: cut, shutdown_timeout_ms: config.server.shutdownTimeout },
          'connections still open at server.shutdownTimeout were closed',
        );
      }
      await committer.drain();
      await wakeups.flush();
      gatewayApp.stop();
      logger.info('gateway stopped');
    },
  };
}

/** Wraps each endpoint's verify in a webhook.verify span (only when tracing is on). */
function withVerifySpans(endpoints: ReadonlyMap<string, Endpoint>): ReadonlyMap<string, Endpoint> {
  const traced = new Map<string, Endpoint>();
  for (const [name, endpoint] of endpoints) {
    const { provider } = endpoint;
    traced.set(name, {
      ...endpoint,
      // Everything else the provider has (handshakes, body decoding, empty acknowledgements)
      // stays reachable through the prototype: only verify is wrapped.
      provider: Object.assign(Object.create(provider) as Provider, {
        verify: (request: VerifyRequest) =>
          inSpanSync(
            'webhook.verify',
            spanAttributes({ endpoint: name, provider: provider.name }),
            (span) => {
              const verdict = provider.verify(request);
              setOutcome(span, verdict.ok ? 'verified' : verdict.code);
              return verdict;
            },
            deliveryParent(request.headers.traceparent),
          ),
      }),
    });
  }
  return traced;
}
