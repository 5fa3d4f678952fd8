import type pg from 'pg';
import { Counter, collectDefaultMetrics, Gauge, Histogram, Registry } from 'prom-client';

/**
 * prom-client's process and Node.js metrics under their standard names (`process_cpu_seconds_total`,
 * `nodejs_eventloop_lag_p99_seconds`, …), unprefixed and complete, so stock Node.js dashboards
 * and alerts find them. Three of them are gauges named `_total` (`nodejs_active_handles_total`,
 * …), which promtool's lint flags; they are kept because those dashboards query them.
 */
export const STANDARD_GAUGES_NAMED_TOTAL = [
  'nodejs_active_handles_total',
  'nodejs_active_requests_total',
  'nodejs_active_resources_total',
] as const;

/** One registry per process; each role adds the metrics it owns (all prefixed `hookgate_`). */
export function createRegistry(): Registry {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry });
  return registry;
}

export interface GatewayMetrics {
  readonly deliveries: Counter<'endpoint' | 'provider' | 'outcome'>;
  readonly ackDuration: Histogram<'endpoint' | 'outcome'>;
  readonly claimBatchSize: Histogram;
  readonly bufferedBytes: Gauge;
}

export function createGatewayMetrics(registry: Registry): GatewayMetrics {
  return {
    deliveries: new Counter({
      name: 'hookgate_deliveries_total',
      help: 'Deliveries answered by the gateway, by outcome (accepted, duplicate, or the rejection code).',
      labelNames: ['endpoint', 'provider', 'outcome'],
      registers: [registry],
    }),
    ackDuration: new Histogram({
      name: 'hookgate_ack_duration_seconds',
      help: 'Time from receiving a delivery to answering it.',
      labelNames: ['endpoint', 'outcome'],
      buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
      registers: [registry],
    }),
    claimBatchSize: new Histogram({
      name: 'hookgate_claim_batch_size',
      help: 'Deliveries committed together in one claim transaction.',
      buckets: [1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024],
      registers: [registry],
    }),
    bufferedBytes: new Gauge({
      name: 'hookgate_gateway_body_bytes',
      help: 'Request-body bytes the gateway has reserved now (declared lengths, chunked bytes read; until answered and claimed); server.maxBufferedBytes bounds it.',
      registers: [registry],
    }),
  };
}

/** The pg pools a process uses, by role (`gateway`, `worker`, …). */
export type PoolsByName = Readonly<
  Record<string, Pick<pg.Pool, 'totalCount' | 'idleCount' | 'waitingCount'>>
>;

/**
 * `hookgate_db_pool_connections{pool,state}`: open (total), idle and waiting-for-a-connection
 * counts per pool, read at scrape time. `waiting` above zero means requests queue for a connection.
 */
export function registerPoolMetrics(registry: Registry, pools: PoolsByName): void {
  new Gauge({
    name: 'hookgate_db_pool_connections',
    help: 'PostgreSQL pool connections by pool and state (total open, idle, waiting clients).',
    labelNames: ['pool', 'state'],
    registers: [registry],
    collect() {
      for (const [pool, p] of Object.entries(pools)) {
        this.set({ pool, state: 'total' }, p.totalCount);
        this.set({ pool, state: 'idle' }, p.idleCount);
        this.set({ pool, state: 'waiting' }, p.waitingCount);
      }
    },
  });
}

/** What a label value becomes once its label has seen too many distinct values (or a huge one). */
export const OTHER_LABEL_VALUE = '(other)';

/**
 * Bounds the values of a label that comes from event data (`event_type`): per scope (an
 * endpoint), the first `limit` distinct values are kept as they are and every later new value,
 * or any value longer than `maxLength`, is reported as `(other)`. A sender inventing types can
 * then add at most `limit` series per endpoint and outcome.
 */
export class BoundedLabelValues {
  private readonly seen = new Map<string, Set<string>>();
  private readonly limit: number;
  private readonly maxLength: number;

  constructor(limit = 100, maxLength = 120) {
    this.limit = limit;
    this.maxLength = maxLength;
  }

  value(scope: string, value: string): string {
    if (value.length > this.maxLength) return OTHER_LABEL_VALUE;
    let values = this.seen.get(scope);
    if (!values) {
      values = new Set();
      this.seen.set(scope, values);
    }
    if (values.has(value)) return value;
    if (values.size >= this.limit) return OTHER_LABEL_VALUE;
    values.add(value);
    return value;
  }
}
