/**
 * How long an event waits before its next attempt after a failed one: the first retry after
 * `retryDelay`, doubling per attempt, at most `retryDelayMax`, of which the last half is random
 * (so events that failed together do not all come back at the same instant). Attempt numbers
 * start at 1: after attempt n fails, the wait is retryDelay × 2^(n−1), halved-and-jittered.
 */
export interface BackoffPolicy {
  readonly retryDelaySeconds: number;
  readonly retryDelayMaxSeconds: number;
}

export function retryDelaySeconds(
  failedAttempt: number,
  policy: BackoffPolicy,
  random = Math.random(),
): number {
  if (policy.retryDelaySeconds <= 0) return 0;
  const full = Math.min(
    policy.retryDelayMaxSeconds,
    policy.retryDelaySeconds * 2 ** Math.max(0, failedAttempt - 1),
  );
  return full / 2 + (full / 2) * random;
}
