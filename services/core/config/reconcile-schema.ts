import { z } from 'zod';
import { durationMs } from './duration.ts';

const MINUTE = 60_000;
const HOUR = 60 * MINUTE;
const DAY = 24 * HOUR;

/**
 * `endpoints.<name>.reconcile`: off unless set. Lists the provider's events from the stored
 * watermark minus `lookback` up to `settle` ago, claims what the inbox lacks, and moves the
 * watermark over what it listed completely (services/core/reconcile/, docs/reconcile.md). Where
 * it reads from (API root, credential, GitHub webhook) is the endpoint's `replay` section.
 */
export const reconcileSchema = z.strictObject({
  /** How often a worker runs it (one run per endpoint at a time, across all workers). */
  every: durationMs
    .pipe(z.number().min(MINUTE, 'must be at least 1m').max(DAY, 'must be at most 1d'))
    .default(15 * MINUTE),
  /** Each run lists again this far below the watermark: events the provider records late. */
  lookback: durationMs
    .pipe(
      z
        .number()
        .min(0)
        .max(30 * DAY, 'must be at most 30d'),
    )
    .default(2 * HOUR),
  /** Where the first run starts (no watermark yet): this long before it. */
  since: durationMs
    .pipe(
      z
        .number()
        .min(MINUTE)
        .max(30 * DAY, 'must be at most 30d'),
    )
    .default(DAY),
  /**
   * Events newer than this are left to the next run: they may still be on their way, and filling
   * them would count an event in flight as missing.
   */
  settle: durationMs.pipe(z.number().min(0).max(HOUR, 'must be at most 1h')).default(5 * MINUTE),
  /**
   * Stripe: the listing is cut in windows of this length, oldest first, and the watermark moves
   * at the end of each one listed completely (so a run stopped by its budget keeps its progress).
   * GitHub and Paddle list newest first without a time filter: one window per run.
   */
  window: durationMs.pipe(z.number().min(MINUTE).max(DAY, 'must be at most 1d')).default(HOUR),
  /** Most API requests per run (each rate-limited answer counts); the run stops there. */
  budget: z.number().int().min(1).max(100_000).default(500),
  /**
   * The HookgateReconcileNotSucceeding alert fires when no run has completed for this long
   * (exported as hookgate_reconcile_stale_after_seconds, which the alert compares against).
   */
  staleAfter: durationMs
    .pipe(
      z
        .number()
        .min(MINUTE)
        .max(30 * DAY, 'must be at most 30d'),
    )
    .default(HOUR),
});

/** The providers whose API lists the events they sent. */
const RECONCILABLE = ['stripe', 'github', 'paddle'] as const;

/** Problems of an endpoint's reconcile section that need the rest of the endpoint. */
export function reconcileIssues(endpoint: {
  readonly provider?: unknown;
  readonly reconcile?: unknown;
  readonly replay?: unknown;
}): { path: (string | number)[]; message: string }[] {
  if (endpoint.reconcile === undefined) return [];
  if (!RECONCILABLE.includes(endpoint.provider as (typeof RECONCILABLE)[number])) {
    return [{ path: ['reconcile'], message: 'is available for stripe, github and paddle endpoints' }];
  }
  if (endpoint.provider === 'github' && endpoint.replay === undefined) {
    return [
      {
        path: ['reconcile'],
        message:
          'needs replay: the webhook that delivers here (repository and hookId, organization and hookId, or appId)',
      },
    ];
  }
  return [];
}
