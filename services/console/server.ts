import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type pg from 'pg';
import type { PgBoss } from 'pg-boss';
import type { Config } from '../core/config/schema.ts';
import { createPool } from '../core/db/pool.ts';
import type { Logger } from '../core/logging.ts';
import { pauseDestinationAction, redeliverAction, resumeDestinationAction } from './actions/destinations.ts';
import { discardAction } from './actions/discard.ts';
import { pauseAction, resumeAction } from './actions/pause.ts';
import { dropQuarantinedAction, releaseQuarantinedAction } from './actions/quarantine.ts';
import { ActionRegistry } from './actions/registry.ts';
import { requeueAction } from './actions/requeue.ts';
import { startApi } from './api/start.ts';
import { createConsoleApp } from './app.ts';
import type { ConsoleContext } from './context.ts';
import { ConsoleAuth } from './security/auth.ts';
import { consoleSettings } from './settings.ts';

export interface ConsoleOptions {
  readonly config: Config;
  readonly databaseUrl: string;
  /** A started pg-boss client, for the actions that send jobs (requeue). */
  readonly boss: PgBoss;
  readonly logger: Logger;
  /** DATABASE_URL unset: the embedded demo database. */
  readonly embedded: boolean;
  readonly env?: NodeJS.ProcessEnv;
  /** The API's clock (its rate limit and Idempotency-Key expiry); tests hold it still. */
  readonly now?: () => number;
}

export interface RunningConsole {
  readonly url: string;
  readonly host: string;
  readonly port: number;
  /** No sign-in: the embedded demo on loopback. */
  readonly demo: boolean;
  readonly pool: pg.Pool;
  stop(): Promise<void>;
}

/** Every action the console offers today; later ones register here (see actions/registry.ts). */
export function consoleActions(): ActionRegistry {
  return new ActionRegistry()
    .register(requeueAction)
    .register(discardAction)
    .register(pauseAction)
    .register(resumeAction)
    .register(releaseQuarantinedAction)
    .register(dropQuarantinedAction)
    .register(pauseDestinationAction)
    .register(resumeDestinationAction)
    .register(redeliverAction);
}

/**
 * `serve --role console`: the web console on its own port with its own small pool (statements
 * bounded by console.queryTimeout), sharing the process's pg-boss client for actions.
 */
export async function startConsole(options: ConsoleOptions): Promise<RunningConsole> {
  const { config, logger } = options;
  const settings = consoleSettings(config.console, options.embedded, options.env ?? process.env);
  const pool = createPool({
    connectionString: options.databaseUrl,
    max: config.console.poolSize,
    statementTimeoutMs: config.console.queryTimeout,
    connectTimeoutMs: config.database.connectTimeout,
    applicationName: 'hookgate-console',
  });
  const endpoints = Object.keys(config.endpoints).sort();
  const endpointInfo = Object.fromEntries(
    endpoints.map((name) => {
      const endpoint = config.endpoints[name]!;
      // The handler's kind only: a sql: statement or module path is configuration, not news.
      return [
        name,
        { provider: endpoint.provider, handler: endpoint.handler.split(':')[0]!, mode: endpoint.mode },
      ];
    }),
  );
  const context: ConsoleContext = {
    pool,
    boss: options.boss,
    logger: logger.child({ component: 'console' }),
    endpoints,
    endpointInfo,
    limits: { pageSize: config.console.pageSize, scanRows: config.console.scanRows },
    latencySample: config.console.latencySample,
    queryTimeoutMs: config.console.queryTimeout,
    actions: consoleActions(),
    demo: settings.demo,
    config,
  };
  const auth = new ConsoleAuth(settings);
  const api = await startApi(context, settings, options.now);
  let stopping = false;
  const app = createConsoleApp({
    context,
    auth,
    api: api.router,
    ready: async () => {
      if (stopping) return 'shutting down';
      try {
        await pool.query('SELECT 1');
        return null;
      } catch {
        return 'database unreachable';
      }
    },
  });
  const server: Server = createServer({ requestTimeout: 30_000, headersTimeout: 10_000 }, app);
  server.keepAliveTimeout = 5_000;
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(settings.port, settings.host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const port = (server.address() as AddressInfo).port;
  const shownHost = settings.host.includes(':') ? `[${settings.host}]` : settings.host;
  const url = `http://${shownHost === '0.0.0.0' || shownHost === '[::]' ? '127.0.0.1' : shownHost}:${port}/`;
  return {
    url,
    host: settings.host,
    port,
    demo: settings.demo,
    pool,
    async stop() {
      stopping = true;
      api.stop();
      await new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeIdleConnections();
        setTimeout(() => server.closeAllConnections(), 5_000).unref();
      });
      await pool.end();
    },
  };
}
