import { Counter, Histogram, type Registry } from 'prom-client';
import { BoundedLabelValues } from '../core/metrics.ts';
import type { AppliedEvent } from './apply.ts';

/**
 * `outcome` of hookgate_events_applied_total. applied, stale, ignored: the event settled so (one
 * per event). retried: an attempt failed and was handed back to pg-boss (one per failed attempt,
 * the last one included). parked, dead: the event ran out of attempts (one per event). skipped:
 * a job whose event was already settled or is gone (a redelivered or expired job; no effect).
 */
export type AppliedOutcome = 'applied' | 'stale' | 'ignored' | 'retried' | 'parked' | 'dead' | 'skipped';

export function appliedOutcome(outcome: AppliedEvent['outcome']): AppliedOutcome {
  switch (outcome) {
    case 'processed':
      return 'applied';
    case 'stale':
    case 'ignored':
      return outcome;
    case 'failed':
      return 'retried';
    case 'dead':
      return 'dead';
    default:
      return 'skipped';
  }
}

type AppliedLabels = { endpoint: string; event_type: string; outcome: string };

export interface WorkerMetrics {
  /** `event_type` values are bounded per endpoint (see BoundedLabelValues). */
  readonly eventsApplied: { inc(labels: AppliedLabels): void };
  readonly applyDuration: Histogram<'endpoint'>;
  readonly endToEnd: Histogram<'endpoint'>;
}

export function createWorkerMetrics(registry: Registry): WorkerMetrics {
  const applied = new Counter({
    name: 'hookgate_events_applied_total',
    help: 'Events the worker settled or attempted, by outcome (applied, stale, ignored, retried, parked, dead, skipped).',
    labelNames: ['endpoint', 'event_type', 'outcome'],
    registers: [registry],
  });
  const eventTypes = new BoundedLabelValues();
  return {
    eventsApplied: {
      inc: (labels) =>
        applied.inc({ ...labels, event_type: eventTypes.value(labels.endpoint, labels.event_type) }),
    },
    applyDuration: new Histogram({
      name: 'hookgate_apply_duration_seconds',
      help: 'Time to apply and commit one batch of events (one transaction).',
      labelNames: ['endpoint'],
      buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
      registers: [registry],
    }),
    endToEnd: new Histogram({
      name: 'hookgate_end_to_end_seconds',
      help: 'Time from an event being received by the gateway to its apply committing (applied, stale, ignored).',
      labelNames: ['endpoint'],
      buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 1800],
      registers: [registry],
    }),
  };
}
