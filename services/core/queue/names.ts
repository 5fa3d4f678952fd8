export const PGBOSS_SCHEMA = 'pgboss';

/** One queue per endpoint, so a noisy provider cannot starve another. */
export function applyQueue(endpoint: string): string {
  return `hookgate.apply.${endpoint}`;
}

/**
 * What an apply job carries: the events (of one endpoint) it dispatches. The worker reads each
 * verified event from the inbox, and applies it only if the row still names this job.
 */
export interface ApplyJobData {
  readonly endpoint: string;
  readonly eventIds: readonly string[];
}

/** The events a fetched apply job carries. */
export function eventIdsOf(data: unknown): string[] {
  const value = data as { eventIds?: unknown } | null;
  if (!Array.isArray(value?.eventIds)) return [];
  return value.eventIds.filter((id): id is string => typeof id === 'string');
}
