import { hash } from 'node:crypto';

export const PGBOSS_SCHEMA = 'pgboss';

/** One queue per endpoint, so a noisy provider cannot starve another. */
export function applyQueue(endpoint: string): string {
  return `hookgate.apply.${endpoint}`;
}

/**
 * A deterministic UUID for a key: apply jobs sent before batch dispatch carried it (one job per
 * event, its id from the endpoint and event id; rows claimed then have no dispatch_job and are
 * found by it).
 */
export function jobIdFor(endpoint: string, eventId: string): string {
  // One-shot hash: the same bytes as hashing the three parts in turn, without a Hash object
  // per call (this runs for every delivery the gateway claims).
  const hex = hash('sha256', `${endpoint}\0${eventId}`, 'hex');
  // Shaped as a version-8 (custom) RFC 9562 UUID.
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-8${hex.slice(13, 16)}-${((Number.parseInt(hex[16]!, 16) & 0x3) | 0x8).toString(16)}${hex.slice(17, 20)}-${hex.slice(20, 32)}`;
}

/**
 * What an apply job carries: the events (of one endpoint) it dispatches. The worker reads each
 * verified event from the inbox, and applies it only if the row still names this job.
 */
export interface ApplyJobData {
  readonly endpoint: string;
  readonly eventIds: readonly string[];
}

/** The events a fetched apply job carries: the batch shape, or one event (jobs sent before it). */
export function eventIdsOf(data: unknown): string[] {
  const value = data as { eventIds?: unknown; eventId?: unknown } | null;
  if (Array.isArray(value?.eventIds))
    return value.eventIds.filter((id): id is string => typeof id === 'string');
  if (typeof value?.eventId === 'string') return [value.eventId];
  return [];
}
