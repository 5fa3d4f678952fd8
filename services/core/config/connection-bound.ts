import { destinationLoopConnections, processConnections } from './connections.ts';
import type { Config } from './schema.ts';

/**
 * The most PostgreSQL connections one hookgate process may open. Every key is bounded on its
 * own, but their product was not: destinations at concurrency 64 with a breaker, on enough
 * endpoints, passed the schema and asked each worker for 98 000 connections, a thousand times
 * PostgreSQL's default max_connections.
 */
export const MAX_PROCESS_CONNECTIONS = 1_000;

const figure = (n: number) => n.toLocaleString('en-US').replaceAll(',', ' ');

/**
 * The sentence refusing a configuration whose busiest process (`serve --role all`, else a worker)
 * would open more than MAX_PROCESS_CONNECTIONS, by services/core/config/connections.ts's arithmetic
 * (the same `serve` sizes its pools with); null when it fits.
 */
export function connectionBoundProblem(config: Config): string | null {
  const all = processConnections(config, 'all');
  if (all <= MAX_PROCESS_CONNECTIONS) return null;
  const worker = processConnections(config, 'worker');
  const endpoints = Object.keys(config.endpoints).length;
  const destinations = destinationLoopConnections(config);
  return (
    `PostgreSQL connections: a worker would open up to ${figure(worker)} PostgreSQL connections, and serve --role all ${figure(all)} ` +
    `(${figure(endpoints)} endpoint${endpoints === 1 ? '' : 's'} × worker.concurrency ${config.worker.concurrency} = ${figure(endpoints * config.worker.concurrency)}` +
    `${destinations > 0 ? `, the destinations' loops ${figure(destinations)}` : ''}, the pools, pg-boss and the wake-up listener: load/README.md, "Connections"); ` +
    `at most ${figure(MAX_PROCESS_CONNECTIONS)} per process: lower worker.concurrency or the destinations' concurrency, or split the endpoints across deployments, each with its own configuration`
  );
}
