import { dirname, resolve } from 'node:path';
import { z } from 'zod';
import { type RunningConsole, startConsole } from '../../console/server.ts';
import { createApplyMetrics } from '../../core/apply/metrics.ts';
import { registerBacklogMetrics } from '../../core/backlog.ts';
import { demoSecretPaths } from '../../core/config/demo-secrets.ts';
import { loadConfig } from '../../core/config/load.ts';
import { type Config, listenAddress } from '../../core/config/schema.ts';
import { CONSOLE_ROLE_CONNECTIONS, QUEUE_CONNECTIONS, workerPoolSize } from '../../core/db/connections.ts';
import { pendingMigrations } from '../../core/db/migrate.ts';
import { createPool } from '../../core/db/pool.ts';
import { checkDatabaseServer } from '../../core/db/server-checks.ts';
import { isUnreachable, untilReachable } from '../../core/db/wait-for-database.ts';
import { registerDestinationGauges } from '../../core/destinations/metrics.ts';
import { routesFrom } from '../../core/destinations/routes.ts';
import { HookgateError } from '../../core/errors.ts';
import { createLogger, type Logger } from '../../core/logging.ts';
import { createGatewayMetrics, createRegistry, registerPoolMetrics } from '../../core/metrics.ts';
import { startMetricsServer } from '../../core/metrics-server.ts';
import { OutageLog } from '../../core/outage-log.ts';
import { createBoss } from '../../core/queue/boss.ts';
import { ensureQueues, outboxPolicyFrom, retryPolicyFrom } from '../../core/queue/queues.ts';
import { stopTracing } from '../../core/tracing.ts';
import { type RunningGateway, startGateway } from '../../gateway/gateway.ts';
import {
  createDestinationMetrics,
  type RunningDestinationRelay,
  startDestinationRelay,
} from '../../worker/destinations.ts';
import { createRelayMetrics, startRelays } from '../../worker/relay.ts';
import { type RunningWorker, startWorker } from '../../worker/worker.ts';
import { databaseAddress, openDatabase, runMigrations } from '../database.ts';
import { refuseDemoSecrets } from '../support/config-checks.ts';
import { claimEmbeddedServe } from '../support/embedded-lock.ts';
import { databaseHost, databaseUnreachable } from '../support/exit.ts';
import { configPath } from '../support/options.ts';

export const serveOptionsSchema = z.strictObject({
  role: z.enum(['gateway', 'worker', 'console', 'all']).default('all'),
  config: z.string().min(1).optional(),
});

const portSchema = z.coerce.number().int().min(0).max(65_535);

function envPort(name: string, fallback: number): number {
  const value = process.env[name];
  if (value === undefined || value === '') return fallback;
  const parsed = portSchema.safeParse(value);
  if (!parsed.success) throw new HookgateError('env_invalid', `${name}="${value}" is not a port number.`);
  return parsed.data;
}

function envAddress(name: string): string | undefined {
  const value = process.env[name]?.trim();
  if (!value) return undefined;
  const parsed = listenAddress.safeParse(value);
  if (!parsed.success) throw new HookgateError('env_invalid', `${name}="${value}" is not an IP address.`);
  return parsed.data;
}

/**
 * Where the gateway listens: LISTEN_ADDRESS, else `server.listenAddress`, else all interfaces
 * when a real database is configured (a container must be reachable) and loopback for the
 * embedded demo (a laptop must not expose a demo with public secrets to its network).
 */
export function resolveListenAddress(config: Config, embedded: boolean): string {
  return envAddress('LISTEN_ADDRESS') ?? config.server.listenAddress ?? (embedded ? '127.0.0.1' : '0.0.0.0');
}

/**
 * Where /metrics (and the worker's probes) listen: METRICS_LISTEN_ADDRESS, else
 * `server.metricsListenAddress`, else loopback, whatever the database. The metrics name
 * endpoints and event types and nothing outside the host needs them unless the operator says
 * so (the chart does: the kubelet and Prometheus reach pods on their pod IP).
 */
export function resolveMetricsListenAddress(config: Config): string {
  return envAddress('METRICS_LISTEN_ADDRESS') ?? config.server.metricsListenAddress ?? '127.0.0.1';
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

export async function serveCommand(raw: unknown): Promise<void> {
  const options = serveOptionsSchema.parse(raw);
  const logger = createLogger();
  const configFile = configPath(options.config);
  const config = loadConfig(configFile);
  const port = envPort('PORT', 8080);
  const metricsPort = envPort('METRICS_PORT', 9464);
  const runsGateway = options.role === 'gateway' || options.role === 'all';
  const runsWorker = options.role === 'worker' || options.role === 'all';
  const configDir = dirname(resolve(configFile));
  const embedded = !process.env.DATABASE_URL?.trim();
  // The web console has a role of its own; `all` runs it too for the embedded demo.
  const runsConsole = options.role === 'console' || (options.role === 'all' && embedded);
  const demoPaths = demoSecretPaths(config);
  refuseDemoSecrets(demoPaths, embedded);
  const host = resolveListenAddress(config, embedded);
  const metricsHost = resolveMetricsListenAddress(config);

  // Until the shutdown below is in place (starting may wait up to database.startupTimeout for
  // PostgreSQL), a signal would end the process without its buffered log lines, the very lines
  // that say why it never became ready. Exiting through process.exit writes them.
  const stopBeforeServing = (signal: NodeJS.Signals): void => {
    logger.warn({ signal }, 'stopped before serving');
    process.exit(signal === 'SIGINT' ? 130 : 143);
  };
  process.once('SIGTERM', stopBeforeServing);
  process.once('SIGINT', stopBeforeServing);
  // Node's default for SIGHUP (a closed terminal, a supervisor's "reload") is to exit at once,
  // with no log line and no drain. The configuration is read at start only: say so, keep serving.
  process.on('SIGHUP', () =>
    logger.warn(
      { signal: 'SIGHUP' },
      'SIGHUP ignored: the configuration is read at start only; restart hookgate (a rollout) to apply changes',
    ),
  );

  if (embedded) claimEmbeddedServe();
  const database = await openDatabase(logger);
  if (demoPaths.length > 0) {
    logger.warn(
      { paths: demoPaths },
      `DEMO ONLY: ${demoPaths.join(', ')} use a published demo secret; anyone can sign deliveries for these endpoints. hookgate refuses this with DATABASE_URL set.`,
    );
  }
  if (database.embedded) {
    await runMigrations(database.url, logger);
  }
  const workerPoolSize = workerPoolSizeFor(config, logger);
  // Never below a minute: short test expiries must not end sessions that are merely slow.
  const workerSessionLimits = { idleInTransactionTimeoutMs: Math.max(config.worker.expireIn, 60_000) };
  const pool = createPool({
    connectionString: database.url,
    max: runsGateway ? config.database.poolSize : runsWorker ? workerPoolSize : CONSOLE_ROLE_CONNECTIONS,
    statementTimeoutMs: config.database.statementTimeout,
    connectTimeoutMs: config.database.connectTimeout,
    applicationName: `hookgate-${options.role}`,
    ...(runsGateway ? {} : workerSessionLimits),
  });
  const pending = await untilReachable(() => pendingMigrations(pool), {
    timeoutMs: config.database.startupTimeout,
    logger,
    where: databaseHost(database.url),
  }).catch(async (error: Error) => {
    await pool.end().catch(() => {});
    // Worded as every one-shot command words it (support/exit.ts): `database_unreachable … at
    // HOST:PORT (CODE)` while it cannot be reached, `database_refused` with the host when it answers no.
    throw isUnreachable(error) ? databaseUnreachable(error, database.url) : error;
  });
  if (pending) {
    await pool.end();
    throw new HookgateError(
      'database_not_migrated',
      `The database is not ready for this version of hookgate (${pending}). Run "hookgate migrate" first.`,
    );
  }
  await checkDatabaseServer(pool, databaseHost(database.url)).catch(async (error: unknown) => {
    await pool.end().catch(() => {});
    throw error;
  });

  // Workers supervise pg-boss (expiry, dead-lettering of expired attempts), so any running worker
  // keeps stalled jobs moving; a gateway-only process does not.
  const boss = createBoss({
    connectionString: database.url,
    max: runsWorker ? QUEUE_CONNECTIONS.worker : QUEUE_CONNECTIONS.gateway,
    supervise: runsWorker,
    superviseIntervalSeconds: Math.max(1, Math.round(config.worker.superviseInterval / 1000)),
    maintenanceIntervalSeconds: Math.round(config.worker.maintenanceInterval / 1000),
    applicationName: `hookgate-${options.role}-queue`,
  });
  // Ctrl-C reaches the whole process group, so an embedded PostgreSQL started by this process
  // stops at the same moment as we do: connection errors from then on are the expected end of
  // the shutdown, not news. Their loggers go quiet below error (queue errors: to debug).
  let interrupted = false;
  const loopLogger = logger.child({});
  // One line when the database goes away, a summary while it stays away, one when it is back.
  const outage = new OutageLog(logger, { where: databaseAddress(database.url) });
  boss.on('error', (error) => {
    if (interrupted) logger.debug({ err: error }, 'queue error during shutdown');
    else if (!outage.failed('queue', error)) logger.error({ err: error }, 'queue error');
  });
  await boss.start();
  await ensureQueues(
    boss,
    Object.keys(config.endpoints),
    retryPolicyFrom(config.worker),
    outboxPolicyFrom(config.relay),
  );

  const registry = createRegistry();
  // One set for the process: the worker and sync-mode endpoints of the gateway both apply events.
  const applyMetrics = createApplyMetrics(registry);
  // The worker gets its own pool in `all` so apply batches never starve the ack path.
  const workerPool =
    runsWorker && runsGateway
      ? createPool({
          connectionString: database.url,
          max: workerPoolSize,
          statementTimeoutMs: config.database.statementTimeout,
          connectTimeoutMs: config.database.connectTimeout,
          applicationName: 'hookgate-worker',
          ...workerSessionLimits,
        })
      : pool;
  registerPoolMetrics(
    registry,
    workerPool === pool ? { [options.role]: pool } : { gateway: pool, worker: workerPool },
  );
  // Every role reports the backlog (cached per process), so it is visible wherever pods run.
  registerBacklogMetrics(registry, {
    db: pool,
    endpoints: Object.keys(config.endpoints),
    onError: (error) => {
      if (!outage.failed('backlog metrics', error))
        logger.warn({ err: error }, 'backlog metrics: query failed');
    },
  });
  registerDestinationGauges(registry, {
    db: pool,
    routes: routesFrom(config),
    onError: (error) => logger.warn({ err: error }, 'destination metrics: query failed'),
  });
  let stopping = false;
  // The worker role has no webhook port: its probes live on the metrics listener (every role).
  const metricsServer = await startMetricsServer(registry, metricsPort, metricsHost, {
    ready: async () => {
      if (stopping) return 'shutting down';
      try {
        await pool.query('SELECT 1');
        outage.recovered();
        return null;
      } catch (error) {
        if (!outage.failed('readiness', error)) logger.warn({ err: error }, 'readiness check failed');
        return 'database unreachable';
      }
    },
  });
  let worker: RunningWorker | null = null;
  let relays: { stop(): Promise<void> } | null = null;
  let destinationRelay: RunningDestinationRelay | null = null;
  let gateway: RunningGateway | null = null;
  let consoleServer: RunningConsole | null = null;
  // The gateway binds its port first: a port in use ends the start before any worker has started
  // (and said so).
  if (runsGateway) {
    const metrics = createGatewayMetrics(registry);
    gateway = await startGateway({
      config,
      pool,
      boss,
      logger,
      metrics,
      applyMetrics,
      port,
      host,
      configDir,
    });
  }
  if (runsWorker) {
    worker = await startWorker({
      config,
      pool: workerPool,
      boss,
      logger: loopLogger,
      configDir,
      metrics: applyMetrics,
      outage,
    });
    relays = await startRelays({
      boss,
      pool: workerPool,
      logger: loopLogger,
      metrics: createRelayMetrics(registry),
      stopTimeoutMs: config.worker.shutdownTimeout,
      batchSize: config.relay.batchSize,
      concurrency: config.relay.concurrency,
      queues: outboxPolicyFrom(config.relay),
    });
    destinationRelay = startDestinationRelay({
      pool: workerPool,
      routes: routesFrom(config),
      logger: loopLogger,
      metrics: createDestinationMetrics(registry),
      pollIntervalMs: config.relay.pollingInterval,
      stopTimeoutMs: config.worker.shutdownTimeout,
    });
  }
  if (runsConsole) {
    consoleServer = await startConsole({ config, databaseUrl: database.url, boss, logger, embedded });
    logger.info(
      {
        url: consoleServer.url,
        host: consoleServer.host,
        port: consoleServer.port,
        sign_in: !consoleServer.demo,
      },
      `console at ${consoleServer.url}${consoleServer.demo ? ' (embedded demo: no sign-in, loopback only)' : ''}`,
    );
  }
  logger.info(
    {
      role: options.role,
      host,
      port: gateway?.port ?? null,
      console: consoleServer?.url ?? null,
      metrics_host: metricsHost,
      metrics_port: metricsServer.port,
    },
    'hookgate is serving',
  );

  const shutdown = async (signal: string): Promise<void> => {
    if (stopping) return;
    stopping = true;
    if (signal === 'SIGINT' && database.embedded && !database.embedded.adoptedPid) {
      interrupted = true;
      loopLogger.level = 'error';
    }
    logger.info({ signal }, 'shutting down');
    try {
      // Whatever still hangs after both grace periods is left to expire and retry (nothing
      // uncommitted was acknowledged); the exit code says the stop was not clean.
      setTimeout(() => {
        logger.error('shutdown did not finish in time; exiting, unfinished work will be retried');
        process.exit(1);
      }, Math.max(config.server.shutdownTimeout, config.worker.shutdownTimeout) + 10_000).unref();
      await Promise.all([
        gateway?.stop(),
        worker?.stop(),
        relays?.stop(),
        destinationRelay?.stop(),
        consoleServer?.stop(),
      ]);
      await boss.stop({ graceful: true, close: true, timeout: config.server.shutdownTimeout });
      await metricsServer.stop();
      if (workerPool !== pool) await workerPool.end();
      await pool.end();
      await database.embedded?.stop();
      await stopTracing().catch((error: Error) =>
        logger.warn({ err: error }, 'trace export failed on shutdown'),
      );
      logger.info('stopped cleanly');
      process.exit(0);
    } catch (error) {
      logger.error({ err: error }, 'shutdown failed');
      process.exit(1);
    }
  };
  process.off('SIGTERM', stopBeforeServing);
  process.off('SIGINT', stopBeforeServing);
  process.on('SIGTERM', () => void shutdown('SIGTERM'));
  process.on('SIGINT', () => void shutdown('SIGINT'));
}
