import { hash } from 'node:crypto';

export const PGBOSS_SCHEMA = 'pgboss';

/** One queue per endpoint, so a noisy provider cannot starve another. */
export function applyQueue(endpoint: string): string {
  return `hookgate.apply.${endpoint}`;
}

export function deadLetterQueue(endpoint: string): string {
  return `hookgate.dead.${endpoint}`;
}

/**
 * The job id is derived from the dedupe key, so enqueueing the same event twice (a retried
 * claim, a requeue racing a redelivery) can never create a second job while the first exists.
 */
export function jobIdFor(endpoint: string, eventId: string): string {
  // One-shot hash: the same bytes as hashing the three parts in turn, without a Hash object
  // per call (this runs for every delivery the gateway claims).
  const hex = hash('sha256', `${endpoint}\0${eventId}`, 'hex');
  // Shaped as a version-8 (custom) RFC 9562 UUID.
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-8${hex.slice(13, 16)}-${((Number.parseInt(hex[16]!, 16) & 0x3) | 0x8).toString(16)}${hex.slice(17, 20)}-${hex.slice(20, 32)}`;
}

/** What a job carries: only the key; the worker reads the verified event from the inbox. */
export interface ApplyJobData {
  readonly endpoint: string;
  readonly eventId: string;
}

/** Downstream effects queued by handlers, one queue per kind (`forward`, `notify`, ...). */
export function outboxQueue(kind: string): string {
  return `hookgate.outbox.${kind}`;
}

/** Where pg-boss moves an outbox job whose retries are exhausted or that was refused for good. */
export function outboxDeadLetterQueue(kind: string): string {
  return `${outboxQueue(kind)}.dead`;
}

/** Outbox job ids derive from the effect's key: a re-run apply cannot queue an effect twice. */
export function outboxJobIdFor(kind: string, key: string): string {
  return jobIdFor(`outbox:${kind}`, key);
}
