import { z } from 'zod';
import { durationMs, formatDuration } from './duration.ts';

const DAY = 86_400_000;

/**
 * How long an event's deduplication key outlives its payload (docs/storage.md, "Dedupe horizon"):
 * 35 days, longer than Stripe's events API (30 days) and GitHub's list of deliveries. Replay and
 * reconciliation refuse windows reaching further back than this unless forced.
 */
export const DEFAULT_DEDUPE_HORIZON_MS = 35 * DAY;

/** `dedupe`: the horizon of deduplication, separate from `hookgate prune --older-than` (payloads). */
export const dedupeSchema = z
  .strictObject({
    horizon: durationMs
      .pipe(
        z
          .number()
          .min(3 * DAY, "must be at least 3d, the providers' retry window (Stripe retries for 3 days)")
          .max(400 * DAY, 'must be at most 400d'),
      )
      .default(DEFAULT_DEDUPE_HORIZON_MS),
  })
  .prefault({});

interface ReconcileWindow {
  readonly every?: unknown;
  readonly lookback?: unknown;
  readonly since?: unknown;
  readonly settle?: unknown;
}

/**
 * A reconcile section whose runs would list past the horizon: the first run lists from `since`
 * ago; every later one from its watermark (at least `settle`, and up to `every` more, old)
 * minus `lookback`. Events of that stretch whose keys are gone would be claimed again.
 */
export function reconcileHorizonIssues(
  reconcile: ReconcileWindow | undefined,
  horizonMs: number,
): { path: string[]; message: string }[] {
  if (reconcile === undefined) return [];
  const { every, lookback, since, settle } = reconcile;
  const horizon = formatDuration(horizonMs);
  const issues: { path: string[]; message: string }[] = [];
  if (typeof since === 'number' && since > horizonMs) {
    issues.push({
      path: ['reconcile', 'since'],
      message: `is ${formatDuration(since)}, past dedupe.horizon (${horizon}): the first run would list events whose keys may be gone and claim them again; lower it, or raise dedupe.horizon`,
    });
  }
  if (
    typeof lookback === 'number' &&
    typeof every === 'number' &&
    typeof settle === 'number' &&
    lookback + every + settle >= horizonMs
  ) {
    issues.push({
      path: ['reconcile', 'lookback'],
      message: `is ${formatDuration(lookback)}: with every and settle a run lists from up to ${formatDuration(lookback)} + ${formatDuration(every)} + ${formatDuration(settle)} ago, not under dedupe.horizon (${horizon}), where events whose keys may be gone would be claimed again; lower it, or raise dedupe.horizon`,
    });
  }
  return issues;
}
