import { z } from 'zod';
import { loadConfig } from '../../core/config/load.ts';
import { pendingMigrations } from '../../core/db/migrate.ts';
import { createPool } from '../../core/db/pool.ts';
import { HookgateError } from '../../core/errors.ts';
import { createLogger } from '../../core/logging.ts';
import { createGatewayMetrics, createRegistry } from '../../core/metrics.ts';
import { startMetricsServer } from '../../core/metrics-server.ts';
import { createBoss } from '../../core/queue/boss.ts';
import { ensureQueues } from '../../core/queue/queues.ts';
import { startGateway } from '../../gateway/gateway.ts';
import { openDatabase, runMigrations } from '../database.ts';

export const serveOptionsSchema = z.strictObject({
  role: z.enum(['gateway', 'worker', 'all']).default('all'),
  config: z.string().min(1),
});

const portSchema = z.coerce.number().int().min(0).max(65_535);

function envPort(name: string, fallback: number): number {
  const value = process.env[name];
  if (value === undefined || value === '') return fallback;
  const parsed = portSchema.safeParse(value);
  if (!parsed.success) throw new HookgateError('env_invalid', `${name}="${value}" is not a port number.`);
  return parsed.data;
}

export async function serveCommand(raw: unknown): Promise<void> {
  const options = serveOptionsSchema.parse(raw);
  const logger = createLogger();
  const config = loadConfig(options.config);
  const port = envPort('PORT', 8080);
  const metricsPort = envPort('METRICS_PORT', 9464);
  if (options.role === 'worker') {
    throw new HookgateError('role_unavailable', 'The worker role is not part of this build yet.');
  }

  const database = await openDatabase(logger);
  if (database.embedded) {
    await runMigrations(database.url, logger);
  }
  const pool = createPool({
    connectionString: database.url,
    max: config.database.poolSize,
    statementTimeoutMs: config.database.statementTimeout,
    connectTimeoutMs: config.database.connectTimeout,
    applicationName: `hookgate-${options.role}`,
  });
  const pending = await pendingMigrations(pool).catch((error: Error) => {
    throw new HookgateError('database_unreachable', `Cannot reach PostgreSQL: ${error.message}`, {
      cause: error,
    });
  });
  if (pending) {
    await pool.end();
    throw new HookgateError(
      'database_not_migrated',
      `The database is not ready for this version of hookgate (${pending}). Run "hookgate migrate" first.`,
    );
  }

  const boss = createBoss({
    connectionString: database.url,
    max: 2,
    supervise: false,
    applicationName: `hookgate-${options.role}-queue`,
  });
  boss.on('error', (error) => logger.error({ err: error }, 'queue error'));
  await boss.start();
  await ensureQueues(boss, Object.keys(config.endpoints));

  const registry = createRegistry();
  const metrics = createGatewayMetrics(registry);
  const metricsServer = await startMetricsServer(registry, metricsPort);
  const gateway = await startGateway({ config, pool, boss, logger, metrics, port });
  logger.info(
    { role: options.role, port: gateway.port, metricsPort: metricsServer.port },
    'hookgate is serving',
  );

  let stopping = false;
  const shutdown = async (signal: string): Promise<void> => {
    if (stopping) return;
    stopping = true;
    logger.info({ signal }, 'shutting down');
    try {
      await gateway.stop();
      await boss.stop({ graceful: true, close: true, timeout: config.server.shutdownTimeout });
      await metricsServer.stop();
      await pool.end();
      await database.embedded?.stop();
      logger.info('stopped cleanly');
      process.exit(0);
    } catch (error) {
      logger.error({ err: error }, 'shutdown failed');
      process.exit(1);
    }
  };
  process.on('SIGTERM', () => void shutdown('SIGTERM'));
  process.on('SIGINT', () => void shutdown('SIGINT'));
}
