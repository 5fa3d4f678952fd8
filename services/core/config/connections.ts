import { rabbitmqBrokerKey } from './bus-schema.ts';
import type { Config } from './schema.ts';

/**
 * How many PostgreSQL connections each hookgate process may hold at most. `serve` sizes its
 * pools from these, and the chart's render-time connection check (NOTES.txt) repeats the
 * arithmetic; a test keeps the two equal.
 */

/** pg-boss's own pool per process: a worker polls, supervises and maintains; a gateway only sends. */
export const QUEUE_CONNECTIONS = { gateway: 2, worker: 6 } as const;

/** A worker's own client that LISTENs for the gateways' wake-ups (services/worker/wakeup-listener.ts). */
export const WAKEUP_LISTENER_CONNECTIONS = 1;

/** `hookgate migrate`: its migration client, plus pg-boss's one while it installs its schema. */
export const MIGRATION_CONNECTIONS = 2;

/**
 * What the destination relay (services/worker/destinations.ts) holds at once: each destination's
 * loop one connection for its claim (the breaker's gate and the rate limit's bucket run on it, one
 * after the other), and with a `breaker` one per slot besides, since each finished attempt feeds
 * the breaker on its own while the loop claims again; and the attempts' group-committed records
 * one, shared by every destination (none without destinations).
 */
export function destinationLoopConnections(config: Pick<Config, 'endpoints'>): number {
  let loops = 0;
  let connections = 0;
  for (const endpoint of Object.values(config.endpoints)) {
    for (const destination of Object.values(endpoint.destinations ?? {})) {
      loops += 1;
      connections += 1 + (destination.breaker ? destination.concurrency : 0);
    }
  }
  return loops === 0 ? 0 : connections + 1;
}

/**
 * What the worker's loops hold at once: each apply loop a connection while it works
 * (concurrency per endpoint), the sweeper one, the backlog query one, and the destination
 * relay's (destinationLoopConnections).
 */
export function workerLoopConnections(config: Config): number {
  const endpoints = Object.keys(config.endpoints).length;
  return endpoints * config.worker.concurrency + 2 + destinationLoopConnections(config);
}

/** The worker's apply pool: worker.poolSize, but never below what its loops need. */
export function workerPoolSize(config: Config): number {
  return Math.max(config.worker.poolSize ?? 0, workerLoopConnections(config));
}

/** `serve --role console`: the readiness and backlog pool of every role, beside the console's own. */
export const CONSOLE_ROLE_CONNECTIONS = 2;

/** The most connections one `serve --role <role>` process may open (its pools at their maximum). */
export function processConnections(config: Config, role: 'gateway' | 'worker' | 'console' | 'all'): number {
  // The console's pool, the role's small pool, and a pg-boss client that only sends (requeue).
  if (role === 'console')
    return config.console.poolSize + CONSOLE_ROLE_CONNECTIONS + QUEUE_CONNECTIONS.gateway;
  const gateway = config.database.poolSize + QUEUE_CONNECTIONS.gateway;
  const worker = workerPoolSize(config) + QUEUE_CONNECTIONS.worker + WAKEUP_LISTENER_CONNECTIONS;
  if (role === 'gateway') return gateway;
  if (role === 'worker') return worker;
  // `all`: the gateway's and the worker's pools, one pg-boss (the worker's) and the listener.
  return config.database.poolSize + worker;
}

/**
 * Not PostgreSQL's, beside its figures: the message-broker connections one worker process (its
 * destination relay) opens. `type: nats`: one per destination (the client reconnects it).
 * `type: rabbitmq`: one per broker, with one confirm-mode channel, shared by the destinations
 * naming the same URL, credentials and TLS files (services/worker/destination-rabbitmq.ts).
 */
export function brokerConnections(config: Pick<Config, 'endpoints'>): {
  readonly nats: number;
  readonly rabbitmq: number;
} {
  let nats = 0;
  const brokers = new Set<string>();
  for (const endpoint of Object.values(config.endpoints)) {
    for (const destination of Object.values(endpoint.destinations ?? {})) {
      if (destination.type === 'nats') nats += 1;
      const rabbit = destination.rabbitmq;
      if (destination.type === 'rabbitmq' && rabbit) {
        brokers.add(rabbitmqBrokerKey(rabbit));
      }
    }
  }
  return { nats, rabbitmq: brokers.size };
}
