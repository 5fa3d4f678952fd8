import type pg from 'pg';
import type { PgBoss } from 'pg-boss';
import type { Registry } from 'prom-client';
import type { RunningConsole } from '../console/server.ts';
import { createApplyMetrics } from '../core/apply/metrics.ts';
import { CONSOLE_ROLE_CONNECTIONS, QUEUE_CONNECTIONS, workerPoolSize } from '../core/config/connections.ts';
import type { Config } from '../core/config/schema.ts';
import { createPool } from '../core/db/pool.ts';
import { checkDatabaseServer } from '../core/db/server-checks.ts';
import { untilReachable } from '../core/db/wait-for-database.ts';
import { registerDestinationGauges } from '../core/destinations/metrics.ts';
import { routesFrom } from '../core/destinations/routes.ts';
import { HookgateError } from '../core/errors.ts';
import type { ClaimHooks } from '../core/inbox/claim.ts';
import { registerPartitionMetrics } from '../core/inbox/partition-metrics.ts';
import type { Logger } from '../core/logging.ts';
import { createGatewayMetrics, createRegistry, registerPoolMetrics } from '../core/metrics.ts';
import { startMetricsServer } from '../core/metrics-server.ts';
import { newerSchemaNotice, pendingMigrations } from '../core/migrate/migrate.ts';
import { readinessCheck } from '../core/migrate/readiness.ts';
import { OutageLog } from '../core/outage-log.ts';
import { registerPauseMetrics } from '../core/pause/metrics.ts';
import { registerQuarantineMetrics } from '../core/quarantine/metrics.ts';
import { createBoss } from '../core/queue/boss.ts';
import { ensureQueues, retryPolicyFrom } from '../core/queue/queues.ts';
import { registerBacklogMetrics } from '../core/read-models/backlog.ts';
import { registerReconcileMetrics } from '../core/reconcile/metrics.ts';
import { reconcilingEndpoints } from '../core/reconcile/schedule.ts';
import type { RunningGateway } from '../gateway/gateway.ts';
import type { RunningDestinationRelay } from '../worker/destinations.ts';
import type { RunningWorker } from '../worker/worker.ts';

// The one composition root: what a `hookgate serve` process runs for its role — pools sized for
// it, pg-boss and its queues, the metrics and probes, the gateway, the worker and relay, the
// console — with one readiness rule and one shutdown order. `serve` and the tests' harnesses
// start hookgate through it. Each role's modules are imported when that role starts, so that a
// gateway pod loads no worker or console code (start-up time is mostly module loading).

export type Role = 'gateway' | 'worker' | 'console' | 'all';

export interface RuntimeOptions {
  readonly config: Config;
  readonly role: Role;
  readonly databaseUrl: string;
  /** host:port, as start-up errors name the server. */
  readonly databaseHost: string;
  /** host:port/database, as outage lines name it. */
  readonly databaseAddress: string;
  readonly logger: Logger;
  /** Directory of the config file, for `module:` handlers. */
  readonly configDir: string;
  readonly port: number;
  readonly host: string;
  readonly metricsPort: number;
  readonly metricsHost: string;
  /** Also run the web console (the console role, or `all` with the embedded database). */
  readonly console?: boolean;
  /** DATABASE_URL unset: the embedded demo (the console signs nobody in). */
  readonly embedded?: boolean;
  /** Claim hooks (tests). */
  readonly claimHooks?: ClaimHooks;
  /** The gateway's clock (signature timestamps, the replay-token limit's windows); tests drive one. */
  readonly now?: () => number;
  /** How long the backlog gauges are cached (tests: 0). */
  readonly backlogCacheMs?: number;
}

export interface Runtime {
  /** The webhook port (null without a gateway). */
  readonly port: number | null;
  readonly metricsPort: number;
  readonly console: RunningConsole | null;
  readonly registry: Registry;
  readonly boss: PgBoss;
  /** The pool the role's requests use (the gateway's, else the worker's or the console role's). */
  readonly pool: pg.Pool;
  /** From now on, connection errors are the expected end (an embedded database stopping with us). */
  quiet(): void;
  /**
   * The shutdown order: the gateway drains (new connections refused, open ones answered) while
   * the worker, the relay and the console finish their work; then pg-boss, the metrics listener
   * and the pools close.
   */
  stop(): Promise<void>;
}

/** The worker's pool size (see workerPoolSize); a configured size below its loops' need is raised. */
function workerPoolSizeFor(config: Config, logger: Logger): number {
  const size = workerPoolSize(config);
  if (config.worker.poolSize !== undefined && config.worker.poolSize < size) {
    logger.warn(
      { configured: config.worker.poolSize, using: size },
      'worker.poolSize is below what the worker loops need; using the larger size',
    );
  }
  return size;
}

/**
 * Starts what the role runs. Waits up to `database.startupTimeout` for PostgreSQL, refuses a
 * database whose migrations are not this version's (`database_not_migrated`) or a server it
 * cannot run on; throws the database's own error while it cannot be reached.
 */
export async function startRuntime(options: RuntimeOptions): Promise<Runtime> {
  const { config, role, logger, databaseUrl } = options;
  const runsGateway = role === 'gateway' || role === 'all';
  const runsWorker = role === 'worker' || role === 'all';
  const workerSize = workerPoolSizeFor(config, logger);
  // Never below a minute: short test expiries must not end sessions that are merely slow.
  const workerSessionLimits = { idleInTransactionTimeoutMs: Math.max(config.worker.expireIn, 60_000) };
  const pool = createPool({
    connectionString: databaseUrl,
    max: runsGateway ? config.database.poolSize : runsWorker ? workerSize : CONSOLE_ROLE_CONNECTIONS,
    statementTimeoutMs: config.database.statementTimeout,
    connectTimeoutMs: config.database.connectTimeout,
    applicationName: `hookgate-${role}`,
    ...(runsGateway ? {} : workerSessionLimits),
  });
  try {
    const pending = await untilReachable(() => pendingMigrations(pool), {
      timeoutMs: config.database.startupTimeout,
      logger,
      where: options.databaseHost,
    });
    if (pending) {
      throw new HookgateError(
        'database_not_migrated',
        `The database is not ready for this version of hookgate (${pending}). Run "hookgate migrate" first.`,
      );
    }
    await checkDatabaseServer(pool, options.databaseHost);
    const newer = await newerSchemaNotice(pool);
    if (newer) logger.warn(newer);
  } catch (error) {
    await pool.end().catch(() => {});
    throw error;
  }

  // Workers supervise pg-boss (expiry, lost heartbeats), so any running worker keeps stalled jobs
  // moving; a gateway-only process does not.
  const boss = createBoss({
    connectionString: databaseUrl,
    max: runsWorker ? QUEUE_CONNECTIONS.worker : QUEUE_CONNECTIONS.gateway,
    supervise: runsWorker,
    superviseIntervalSeconds: Math.max(1, Math.round(config.worker.superviseInterval / 1000)),
    maintenanceIntervalSeconds: Math.round(config.worker.maintenanceInterval / 1000),
    applicationName: `hookgate-${role}-queue`,
  });
  let interrupted = false;
  // The loops' logger goes quiet below error once interrupted (see quiet()).
  const loopLogger = logger.child({});
  // One line when the database goes away, a summary while it stays away, one when it is back.
  const outage = new OutageLog(logger, { where: options.databaseAddress });
  boss.on('error', (error) => {
    if (interrupted) logger.debug({ err: error }, 'queue error during shutdown');
    else if (!outage.failed('queue', error)) logger.error({ err: error }, 'queue error');
  });
  await boss.start();
  // The console only sends jobs to queues the gateways and workers made: it changes no queue, so
  // its database role (hookgate_console, roles.ts) needs no rights on pg-boss's queue table.
  if (role !== 'console')
    await ensureQueues(boss, Object.keys(config.endpoints), retryPolicyFrom(config.worker));

  const registry = createRegistry();
  // One set for the process: the worker and sync-mode endpoints of the gateway both apply events.
  const applyMetrics = createApplyMetrics(registry);
  // The worker gets its own pool in `all` so apply batches never starve the ack path.
  const workerPool =
    runsWorker && runsGateway
      ? createPool({
          connectionString: databaseUrl,
          max: workerSize,
          statementTimeoutMs: config.database.statementTimeout,
          connectTimeoutMs: config.database.connectTimeout,
          applicationName: 'hookgate-worker',
          ...workerSessionLimits,
        })
      : pool;
  registerPoolMetrics(
    registry,
    workerPool === pool ? { [role]: pool } : { gateway: pool, worker: workerPool },
  );
  // Every role reports the backlog (cached per process), so it is visible wherever pods run.
  registerBacklogMetrics(registry, {
    db: pool,
    endpoints: Object.keys(config.endpoints),
    ...(options.backlogCacheMs === undefined ? {} : { cacheMs: options.backlogCacheMs }),
    onError: (error) => {
      if (!outage.failed('backlog metrics', error))
        logger.warn({ err: error }, 'backlog metrics: query failed');
    },
  });
  registerPauseMetrics(registry, {
    db: pool,
    endpoints: Object.keys(config.endpoints),
    onError: (error) => {
      if (!outage.failed('pause metrics', error)) logger.warn({ err: error }, 'pause metrics: query failed');
    },
  });
  registerQuarantineMetrics(registry, {
    db: pool,
    endpoints: Object.keys(config.endpoints),
    maxHeldPerEndpoint: config.quarantine.maxHeldPerEndpoint,
    onError: (error) => {
      if (!outage.failed('quarantine metrics', error))
        logger.warn({ err: error }, 'quarantine metrics: query failed');
    },
  });
  registerPartitionMetrics(registry, {
    db: pool,
    onError: (error) => {
      if (!outage.failed('inbox partition metrics', error))
        logger.warn({ err: error }, 'inbox partition metrics: query failed');
    },
  });
  registerDestinationGauges(registry, {
    db: pool,
    routes: routesFrom(config),
    onError: (error) => {
      if (!outage.failed('destination metrics', error))
        logger.warn({ err: error }, 'destination metrics: query failed');
    },
  });
  // Reconciliation's gap metrics, likewise database-wide (docs/reconcile.md).
  registerReconcileMetrics(registry, {
    db: pool,
    endpoints: reconcilingEndpoints(config),
    onError: (error) => {
      if (!outage.failed('reconcile metrics', error))
        logger.warn({ err: error }, 'reconcile metrics: query failed');
    },
  });
  let stopping = false;
  const ready = readinessCheck(pool, { logger, outage, stopping: () => stopping });
  // The worker role has no webhook port: its probes live on the metrics listener (every role).
  const metricsServer = await startMetricsServer(registry, options.metricsPort, options.metricsHost, {
    ready,
  });
  let worker: RunningWorker | null = null;
  let destinationRelay: RunningDestinationRelay | null = null;
  let reconciler: { stop(): Promise<void> } | null = null;
  let gateway: RunningGateway | null = null;
  let consoleServer: RunningConsole | null = null;
  const stop = async (): Promise<void> => {
    stopping = true;
    await Promise.all([
      gateway?.stop(),
      worker?.stop(),
      destinationRelay?.stop(),
      reconciler?.stop(),
      consoleServer?.stop(),
    ]);
    await boss.stop({ graceful: true, close: true, timeout: config.server.shutdownTimeout });
    await metricsServer.stop();
    if (workerPool !== pool) await workerPool.end();
    await pool.end();
  };
  try {
    // The gateway binds its port first: a port in use ends the start before any worker has
    // started (and said so).
    if (runsGateway) {
      const { startGateway } = await import('../gateway/gateway.ts');
      gateway = await startGateway({
        config,
        pool,
        boss,
        logger,
        metrics: createGatewayMetrics(registry),
        applyMetrics,
        port: options.port,
        host: options.host,
        configDir: options.configDir,
        readiness: ready,
        ...(options.claimHooks ? { hooks: options.claimHooks } : {}),
        ...(options.now ? { now: options.now } : {}),
      });
    }
    if (runsWorker) {
      const [{ startWorker }, destinations, { startReconciler }] = await Promise.all([
        import('../worker/worker.ts'),
        import('../worker/destinations.ts'),
        import('../worker/reconciler.ts'),
      ]);
      worker = await startWorker({
        config,
        pool: workerPool,
        boss,
        logger: loopLogger,
        configDir: options.configDir,
        metrics: applyMetrics,
        outage,
      });
      destinationRelay = destinations.startDestinationRelay({
        pool: workerPool,
        routes: routesFrom(config),
        logger: loopLogger,
        metrics: destinations.createDestinationMetrics(registry),
        pollIntervalMs: config.relay.pollingInterval,
        allowedDestinations: config.relay.allowedDestinations,
        stopTimeoutMs: config.worker.shutdownTimeout,
      });
      // Endpoints with a reconcile section (docs/reconcile.md); nothing otherwise.
      reconciler = await startReconciler({ config, pool: workerPool, boss, logger: loopLogger });
    }
    if (options.console) {
      const { startConsole } = await import('../console/server.ts');
      consoleServer = await startConsole({
        config,
        databaseUrl,
        boss,
        logger,
        embedded: options.embedded ?? false,
      });
    }
  } catch (error) {
    await stop().catch(() => {});
    throw error;
  }
  return {
    port: gateway?.port ?? null,
    metricsPort: metricsServer.port,
    console: consoleServer,
    registry,
    boss,
    pool,
    quiet() {
      interrupted = true;
      loopLogger.level = 'error';
      outage.quiet();
    },
    stop,
  };
}
