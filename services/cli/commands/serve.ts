import { dirname, resolve } from 'node:path';
import { z } from 'zod';
import { demoSecretPaths } from '../../core/config/demo-secrets.ts';
import { loadConfig } from '../../core/config/load.ts';
import { type Config, listenAddress } from '../../core/config/schema.ts';
import { HookgateError } from '../../core/errors.ts';
import { createLogger } from '../../core/logging.ts';
import { stopTracing } from '../../core/tracing.ts';
import { isUnreachable } from '../../core/unreachable.ts';
import { startRuntime } from '../../runtime/runtime.ts';
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

export async function serveCommand(raw: unknown): Promise<void> {
  const options = serveOptionsSchema.parse(raw);
  const logger = createLogger();
  const configFile = configPath(options.config);
  const config = loadConfig(configFile);
  const port = envPort('PORT', 8080);
  const metricsPort = envPort('METRICS_PORT', 9464);
  const _runsGateway = options.role === 'gateway' || options.role === 'all';
  const _runsWorker = options.role === 'worker' || options.role === 'all';
  const configDir = dirname(resolve(configFile));
  const embedded = !process.env.DATABASE_URL?.trim();
  // The web console has a role of its own; `all` runs it too for the embedded demo.
  const runsConsole = options.role === 'console' || (options.role === 'all' && embedded);
  const demoPaths = demoSecretPaths(config);
  refuseDemoSecrets(demoPaths, embedded, configFile);
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
  const runtime = await startRuntime({
    config,
    role: options.role,
    databaseUrl: database.url,
    databaseHost: databaseHost(database.url),
    databaseAddress: databaseAddress(database.url),
    logger,
    configDir,
    port,
    host,
    metricsPort,
    metricsHost,
    console: runsConsole,
    embedded,
  }).catch((error: Error) => {
    // Worded as every one-shot command words it (support/exit.ts): `database_unreachable … at
    // HOST:PORT (CODE)` while it cannot be reached, `database_refused` with the host when it answers no.
    throw isUnreachable(error) ? databaseUnreachable(error, database.url) : error;
  });
  const consoleServer = runtime.console;
  if (consoleServer) {
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
      port: runtime.port,
      console: consoleServer?.url ?? null,
      metrics_host: metricsHost,
      metrics_port: runtime.metricsPort,
    },
    'hookgate is serving',
  );

  let stopping = false;
  const shutdown = async (signal: string): Promise<void> => {
    if (stopping) return;
    stopping = true;
    if (signal === 'SIGINT' && database.embedded && !database.embedded.adoptedPid) runtime.quiet();
    logger.info({ signal }, 'shutting down');
    try {
      // Whatever still hangs after both grace periods is left to expire and retry (nothing
      // uncommitted was acknowledged); the exit code says the stop was not clean.
      setTimeout(() => {
        logger.error('shutdown did not finish in time; exiting, unfinished work will be retried');
        process.exit(1);
      }, Math.max(config.server.shutdownTimeout, config.worker.shutdownTimeout) + 10_000).unref();
      await runtime.stop();
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
