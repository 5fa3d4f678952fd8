import { randomUUID } from 'node:crypto';
import type pg from 'pg';
import type { PgBoss } from 'pg-boss';
import { recordAction } from '../audit/audit.ts';
import type { EndpointConfig } from '../config/schema.ts';
import { describeError, HookgateError } from '../errors.ts';
import { checkDedupeHorizon } from '../inbox/dedupe-horizon.ts';
import { knownEventIds } from '../inbox/known.ts';
import { createProvider } from '../providers/index.ts';
import { claimFetchedPage } from '../replay/run.ts';
import type { ReplaySource, ReplayWindow } from '../replay/types.ts';
import {
  advanceWatermark,
  finishRun,
  peekState,
  type RunFigures,
  renewLease,
  takeLease,
} from './state-sql.ts';
import { windowsBetween } from './windows.ts';

/** A run's lease lasts this long unless renewed; it is renewed every third of it. */
export const LEASE_SECONDS = 90;

/** How often a run renews its lease: two renewals may fail before another run can take it. */
export function leaseRenewalMs(leaseSeconds: number): number {
  return (leaseSeconds * 1000) / 3;
}

export interface ReconcileOptions {
  /** Start here instead of the watermark minus lookback (`--since`). */
  readonly since?: Date;
  /** Only count: claim nothing, move nothing, take no lease. */
  readonly dryRun?: boolean;
  readonly now?: () => number;
  readonly leaseSeconds?: number;
  /** Aborted: the run stops before its next request (a worker shutting down). */
  readonly signal?: AbortSignal;
  /**
   * Who started the run (`hookgate reconcile`): an operator's run, dry or not, is recorded in
   * hookgate.audit; the worker's scheduled runs pass none and are not operator actions.
   */
  readonly actor?: string;
  /** `dedupe.horizon`: a listing starting before it is refused unless forced. */
  readonly horizonMs: number;
  /** `hookgate reconcile --force`: list past the horizon anyway (audited as forced). */
  readonly force?: boolean;
}

export interface ReconcileReport extends Omit<RunFigures, 'error'> {
  readonly endpoint: string;
  readonly dryRun: boolean;
  readonly error: string | null;
  /** The listing's span: from (watermark − lookback, or --since) to until (now − settle). */
  readonly from: Date;
  readonly until: Date;
  /** The watermark after the run (a dry run: the one it found). */
  readonly watermark: Date | null;
  readonly coveredSince: Date | null;
  /** Up to 20 reasons for unusable events. */
  readonly problems: readonly string[];
}

/**
 * One reconciliation run of an endpoint: lists its provider's events from the watermark minus
 * lookback (or `since`) to `settle` ago, window by window, oldest window first; claims what the
 * inbox lacks through the replay's claim path, flagged `received_via = 'api_reconcile'`; and moves
 * the watermark to a window's end once all its pages are listed and claimed, only where the window
 * starts at or below the watermark (so the covered span stays gap-free). A failure, the budget or a
 * lost lease end the run where it is: the windows done keep their progress, the rest waits for the
 * next run. Throws `reconcile_busy` while another run holds the endpoint.
 */
export async function reconcileEndpoint(
  pool: pg.Pool,
  boss: PgBoss | null,
  endpointName: string,
  endpoint: EndpointConfig,
  source: ReplaySource,
  options: ReconcileOptions,
): Promise<ReconcileReport> {
  const settings = endpoint.reconcile;
  if (!settings) {
    throw new HookgateError('usage_invalid', `Endpoint ${endpointName} has no reconcile section.`);
  }
  const now = options.now ?? Date.now;
  const startedAt = now();
  // The run's duration from the monotonic clock, whatever clock places its span.
  const started = performance.now();
  const dryRun = options.dryRun === true || boss === null;
  const leaseSeconds = options.leaseSeconds ?? LEASE_SECONDS;
  const owner = randomUUID();
  // Before the lease: nothing between taking it and the try below may throw.
  const provider = createProvider(endpoint);
  let state: { coveredSince: Date | null; watermark: Date | null };
  if (dryRun) {
    state = await peekState(pool, endpointName);
  } else {
    const leased = await takeLease(pool, endpointName, owner, leaseSeconds);
    if (!leased) {
      throw new HookgateError(
        'reconcile_busy',
        `Another run is reconciling ${endpointName} now; this one did nothing.`,
      );
    }
    state = leased;
  }

  // Whole seconds: Stripe's `created` is whole seconds, so windows never split one.
  const until = new Date(Math.floor((startedAt - settings.settle) / 1000) * 1000);
  const from =
    options.since ??
    (state.watermark
      ? new Date(state.watermark.getTime() - settings.lookback)
      : new Date(Math.floor((startedAt - settings.since) / 1000) * 1000));
  const coveredSince = state.coveredSince ?? from;
  let watermark = state.watermark;
  let horizon: { readonly safeSince: Date; readonly beyond: boolean };
  try {
    horizon = await checkDedupeHorizon(pool, {
      since: from,
      now: startedAt,
      horizonMs: options.horizonMs,
      force: options.force === true,
      action: 'reconciliation',
      flag: '--since, or a reconcile.lookback that keeps runs inside it',
    });
  } catch (refusal) {
    // The run ends here, said on the endpoint's state (`reconcile status`, the alert) and to the caller.
    if (!dryRun) {
      await finishRun(pool, endpointName, owner, {
        listed: 0,
        present: 0,
        filled: 0,
        unusable: 0,
        deliveryFailures: 0,
        apiCalls: 0,
        outcome: 'failed',
        error: describeError(refusal),
        durationMs: performance.now() - started,
      });
    }
    throw refusal;
  }

  let lost = false;
  const renewal = dryRun
    ? null
    : setInterval(() => {
        renewLease(pool, endpointName, owner, leaseSeconds).then(
          (held) => {
            if (!held) lost = true;
          },
          () => {
            // A failed renewal is retried at the next tick; the lease outlives two of them.
          },
        );
      }, leaseRenewalMs(leaseSeconds));
  renewal?.unref();

  const seen = new Set<string>();
  const problems: string[] = [];
  const figures = { listed: 0, present: 0, filled: 0, unusable: 0, deliveryFailures: 0, apiCalls: 0 };
  let outcome: RunFigures['outcome'] = 'complete';
  let error: string | null = null;
  const hooks = {
    beforeRequest: () => {
      // A HookgateError, so the API readers pass it through unwrapped.
      if (options.signal?.aborted)
        throw new HookgateError('reconcile_busy', 'The run was stopped: the process is shutting down.');
      if (lost) throw new HookgateError('reconcile_busy', 'The run lost its lease to another run.');
      if (figures.apiCalls >= settings.budget) {
        throw new HookgateError(
          'reconcile_budget_spent',
          `The run made its ${settings.budget} API requests (reconcile.budget).`,
        );
      }
      figures.apiCalls += 1;
    },
    known: (ids: readonly string[]) => knownEventIds(pool, endpointName, ids),
  };
  const windows: ReplayWindow[] =
    until.getTime() <= from.getTime()
      ? []
      : source.filtersByTime
        ? windowsBetween(from, until, settings.window)
        : [{ since: from, until }];
  try {
    for (const window of windows) {
      for await (const page of source.pages(window, hooks)) {
        figures.listed += page.events.length + page.known;
        figures.present += page.known;
        figures.deliveryFailures += page.deliveryFailures;
        const counts = await claimFetchedPage(pool, boss, endpointName, provider, page.events, {
          dryRun,
          receivedVia: 'api_reconcile',
          seen,
          payloadSearch: endpoint.payloadSearch,
        });
        figures.filled += counts.new;
        figures.present += counts.present;
        figures.unusable += counts.unusable;
        problems.push(...counts.problems.slice(0, 20 - problems.length));
      }
      // Every page of the window is listed and claimed. Its end becomes the watermark only when
      // it joins the span already covered (a --since above the watermark leaves a gap below).
      const joins = watermark === null ? window.since <= coveredSince : window.since <= watermark;
      if (!dryRun && joins && (watermark === null || window.until > watermark)) {
        if (!(await advanceWatermark(pool, endpointName, owner, coveredSince, window.until))) {
          lost = true;
          throw new HookgateError('reconcile_busy', 'The run lost its lease to another run.');
        }
        watermark = window.until;
      }
    }
  } catch (failure) {
    error = describeError(failure);
    outcome = options.signal?.aborted
      ? 'stopped'
      : failure instanceof HookgateError && failure.code === 'reconcile_budget_spent'
        ? 'budget'
        : lost
          ? 'lease_lost'
          : 'failed';
  } finally {
    if (renewal) clearInterval(renewal);
  }
  const durationMs = performance.now() - started;
  if (!dryRun) {
    await finishRun(pool, endpointName, owner, { ...figures, outcome, error, durationMs });
  }
  if (options.actor !== undefined) {
    await recordAction(pool, {
      actor: options.actor,
      command: 'reconcile',
      endpoint: endpointName,
      filters: {
        ...(options.since ? { since: options.since.toISOString() } : {}),
        from: from.toISOString(),
        until: until.toISOString(),
        listed: figures.listed,
        present: figures.present,
        outcome,
        dedupe_safe_since: horizon.safeSince.toISOString(),
        ...(horizon.beyond ? { forced_past_dedupe_horizon: true } : {}),
      },
      count: figures.filled,
      dryRun,
    });
  }
  return {
    endpoint: endpointName,
    dryRun,
    ...figures,
    outcome,
    error,
    durationMs,
    from,
    until,
    watermark,
    coveredSince: watermark === null ? state.coveredSince : coveredSince,
    problems,
  };
}
