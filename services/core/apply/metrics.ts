import { Counter, Histogram, type Registry } from 'prom-client';
import { BoundedLabelValues } from '../metrics.ts';
import type { EventOutcome } from './engine.ts';

/**
 * `outcome` of hookgate_events_applied_total. applied, stale, ignored: the event settled so (one
 * per event). retried: an attempt failed and the event was sent again with a backoff (one per
 * failed attempt but the last). parked, dead: the event ran out of attempts, or cannot be
 * applied at all (one per event). skipped: an event a job carried that was already settled, is
 * carried by a newer job, or is gone (no effect).
 */
export type AppliedOutcome = 'applied' | 'stale' | 'ignored' | 'retried' | 'parked' | 'dead' | 'skipped';

export function appliedOutcome(outcome: EventOutcome): AppliedOutcome {
  switch (outcome) {
    case 'processed':
      return 'applied';
    case 'stale':
    case 'ignored':
    case 'parked':
    case 'dead':
      return outcome;
    case 'retry':
      return 'retried';
    default:
      return 'skipped';
  }
}

type AppliedLabels = { endpoint: string; event_type: string; outcome: string };

/** What the apply engine records, in whichever process runs it (a worker, or a sync-mode gateway). */
export interface ApplyMetrics {
  /** `event_type` values are bounded per endpoint (see BoundedLabelValues). */
  readonly eventsApplied: { inc(labels: AppliedLabels): void };
  readonly applyDuration: Histogram<'endpoint'>;
  readonly endToEnd: Histogram<'endpoint'>;
}

export function createApplyMetrics(registry: Registry): ApplyMetrics {
  const applied = new Counter({
    name: 'hookgate_events_applied_total',
    help: 'Events applied or attempted, by outcome (applied, stale, ignored, retried, parked, dead, skipped).',
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
      help: 'Time to apply one batch of events inside its transaction (a worker batch, or a sync-mode claim).',
      labelNames: ['endpoint'],
      buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
      registers: [registry],
    }),
    endToEnd: new Histogram({
      name: 'hookgate_end_to_end_seconds',
      help: 'Time from an event being received by the gateway to its apply (applied, stale, ignored).',
      labelNames: ['endpoint'],
      buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 1800],
      registers: [registry],
    }),
  };
}
