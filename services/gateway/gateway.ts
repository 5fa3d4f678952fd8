import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type pg from 'pg';
import type { PgBoss } from 'pg-boss';
import type { Config } from '../core/config/schema.ts';
import { pendingMigrations } from '../core/db/migrate.ts';
import { type Claim, type ClaimHooks, type ClaimResult, claimBatch } from '../core/inbox/claim.ts';
import { GroupCommitter } from '../core/inbox/group-commit.ts';
import type { Logger } from '../core/logging.ts';
import type { GatewayMetrics } from '../core/metrics.ts';
import { createGatewayApp } from './app.ts';
import { buildEndpoints } from './endpoints.ts';

export interface GatewayOptions {
  readonly config: Config;
  readonly pool: pg.Pool;
  readonly boss: PgBoss;
  readonly logger: Logger;
  readonly metrics: GatewayMetrics;
  readonly port: number;
  readonly host?: string;
  readonly hooks?: ClaimHooks;
  readonly now?: () => number;
}

export interface RunningGateway {
  readonly port: number;
  /** Stops accepting, answers what is in flight, then returns; the caller closes the pool. */
  stop(): Promise<void>;
}

export async function startGateway(options: GatewayOptions): Promise<RunningGateway> {
  const { config, pool, boss, logger, metrics } = options;
  let shuttingDown = false;
  let migrated = false;

  const committer = new GroupCommitter<Claim, ClaimResult>({
    maxBatch: config.claim.maxBatch,
    maxWaitMs: config.claim.maxWait,
    concurrency: config.claim.concurrency,
    commit: (claims) => claimBatch(pool, boss, claims, options.hooks),
    onBatch: (size) => metrics.claimBatchSize.observe(size),
  });

  const app = createGatewayApp({
    endpoints: buildEndpoints(config),
    bodyLimit: config.server.bodyLimit,
    metrics,
    logger,
    claim: (claim) => committer.submit(claim),
    now: options.now ?? Date.now,
    shuttingDown: () => shuttingDown,
    readiness: async () => {
      try {
        if (!migrated) {
          const pending = await pendingMigrations(pool);
          if (pending) return pending;
          migrated = true;
        } else {
          await pool.query('SELECT 1');
        }
        return null;
      } catch (error) {
        return `database unreachable: ${(error as Error).message}`;
      }
    },
  });

  const server: Server = createServer({ maxHeaderSize: config.server.headerLimit }, app);
  server.requestTimeout = config.server.requestTimeout;
  server.headersTimeout = Math.min(config.server.requestTimeout, 60_000);
  server.keepAliveTimeout = 65_000;
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port, options.host ?? '0.0.0.0', () => resolve());
  });
  const port = (server.address() as AddressInfo).port;
  logger.info({ port, endpoints: Object.keys(config.endpoints) }, 'gateway listening');

  return {
    port,
    async stop() {
      shuttingDown = true;
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      server.closeIdleConnections();
      const deadline = new Promise<void>((resolve) => {
        setTimeout(() => {
          server.closeAllConnections();
          resolve();
        }, config.server.shutdownTimeout).unref();
      });
      await Promise.race([closed, deadline]);
      await committer.drain();
      logger.info('gateway stopped');
    },
  };
}
