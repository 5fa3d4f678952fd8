import { formatDuration } from '../config/duration.ts';
import type { Queryable } from '../db/pool.ts';
import { HookgateError } from '../errors.ts';
import { keysPrunedBefore } from './partitions.ts';

// The dedupe horizon (docs/storage.md, "Dedupe horizon"): how far back deduplication still
// remembers an event whose payload was pruned. `hookgate replay` and reconciliation pull events
// back from a provider's API and claim them; before the horizon a pruned event's key may be gone,
// and the claim would take it for a new event and apply it a second time.

export interface HorizonWindow {
  /** Where the window starts. */
  readonly since: Date;
  /** The caller's clock, epoch ms. */
  readonly now: number;
  /** `dedupe.horizon`. */
  readonly horizonMs: number;
  /** `--force`: go ahead anyway (the caller audits it). */
  readonly force: boolean;
  /** What the window is for, in the sentence: `replay`, `reconciliation`. */
  readonly action: string;
  /** How to start later, in the sentence: `--since`. */
  readonly flag: string;
}

/**
 * The oldest time a window may start at and still be deduplicated: `horizon` before now, or
 * later where the keys' retention has gone further (prune run with a shorter horizon then).
 */
export async function dedupeSafeSince(db: Queryable, now: number, horizonMs: number): Promise<Date> {
  const byHorizon = now - horizonMs;
  const floor = await keysPrunedBefore(db);
  return new Date(Math.max(byHorizon, floor?.getTime() ?? Number.NEGATIVE_INFINITY));
}

/**
 * Refuses (exit 2, with a sentence) a window starting before what deduplication remembers, unless
 * forced. Returns when the safe part starts, and whether the window reaches past it.
 */
export async function checkDedupeHorizon(
  db: Queryable,
  window: HorizonWindow,
): Promise<{ readonly safeSince: Date; readonly beyond: boolean }> {
  const safeSince = await dedupeSafeSince(db, window.now, window.horizonMs);
  const beyond = window.since.getTime() < safeSince.getTime();
  if (beyond && !window.force) {
    const pruned = safeSince.getTime() > window.now - window.horizonMs;
    throw new HookgateError(
      'dedupe_horizon_exceeded',
      `The ${window.action} window starts at ${window.since.toISOString()}, before ${safeSince.toISOString()}: ` +
        `deduplication keys older than that ${pruned ? 'were pruned' : `are pruned (dedupe.horizon is ${formatDuration(window.horizonMs)})`}, ` +
        `so an event of that stretch whose payload was pruned too would be stored and applied a second time. ` +
        `Start at ${safeSince.toISOString()} or later (${window.flag}), or add --force to do it anyway (audited).`,
    );
  }
  return { safeSince, beyond };
}
