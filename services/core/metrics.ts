import { Counter, collectDefaultMetrics, Histogram, Registry } from 'prom-client';

/** One registry per process; each role adds the metrics it owns. */
export function createRegistry(): Registry {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry, prefix: 'hookgate_' });
  return registry;
}

export interface GatewayMetrics {
  readonly deliveries: Counter<'endpoint' | 'provider' | 'outcome'>;
  readonly ackDuration: Histogram<'endpoint' | 'outcome'>;
  readonly claimBatchSize: Histogram;
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
  };
}
