import type pg from 'pg';
import type { PgBoss } from 'pg-boss';
import { recordAction } from '../audit/audit.ts';
import type { EndpointConfig } from '../config/schema.ts';
import { HookgateError } from '../errors.ts';
import { type Claim, claimBatch } from '../inbox/claim.ts';
import { checkDedupeHorizon } from '../inbox/dedupe-horizon.ts';
import { identityProblem } from '../inbox/identity-checks.ts';
import { presentInInbox } from '../inbox/presence.ts';
import { createProvider } from '../providers/index.ts';
import type { Provider } from '../providers/types.ts';
import type { FetchedEvent, ReplaySource, ReplayWindow } from './types.ts';

export interface ReplayReport {
  /** Events the API returned in the window (redeliveries of one event included). */
  readonly fetched: number;
  /** Stored now: they were missing, and are applied like any delivery. */
  readonly new: number;
  /**
   * Already in the inbox under its id, or (ids in unsigned headers) under its body's digest, or a
   * redelivery of one fetched earlier: absorbed.
   */
  readonly alreadyPresent: number;
  /** Returned by the API but without what hookgate needs to store it (an id, a type). */
  readonly unusable: number;
  /** Up to 20 reasons for the unusable ones. */
  readonly problems: readonly string[];
}

export interface ReplayOptions {
  /** Who asked (recorded in hookgate.audit with the counts). */
  readonly actor: string;
  readonly dryRun?: boolean;
  readonly onPage?: (fetchedSoFar: number) => void;
  /** `dedupe.horizon`: a window starting before it is refused unless forced. */
  readonly horizonMs: number;
  /** `--force`: replay a window reaching past the horizon anyway (audited as forced). */
  readonly force?: boolean;
  /** The clock the horizon is measured from (epoch ms; default now). */
  readonly now?: number;
}

/** What claiming one page of fetched events came to. */
export interface PageCounts {
  readonly new: number;
  readonly present: number;
  readonly unusable: number;
  readonly problems: readonly string[];
}

export interface ClaimPageOptions {
  /** Only count, against the inbox and `seen`: store nothing. */
  readonly dryRun: boolean;
  readonly receivedVia: 'api_replay' | 'api_reconcile';
  /** Ids and digests counted in earlier pages of the same run (dry runs: absorbs redeliveries). */
  readonly seen: Set<string>;
  /** The endpoint's `payloadSearch` (claim.ts). */
  readonly payloadSearch: boolean;
}

/**
 * Feeds one page of events read back from a provider's API through the gateway's claim
 * (claimBatch): the inbox's keys absorb what is already there (the id, and for ids in unsigned
 * headers the body digest, which the claim computes from the JSON as the gateway's does), the
 * rest is stored with its job and flagged `received_via`. A dry run only counts. Shared by
 * `hookgate replay` and reconciliation (services/core/reconcile/run.ts).
 */
export async function claimFetchedPage(
  pool: pg.Pool,
  boss: PgBoss | null,
  endpointName: string,
  provider: Provider,
  page: readonly FetchedEvent[],
  options: ClaimPageOptions,
): Promise<PageCounts> {
  let fresh = 0;
  let present = 0;
  let unusable = 0;
  const problems: string[] = [];
  const claims: Claim[] = [];
  for (const item of page) {
    let body: unknown;
    try {
      body = JSON.parse(item.body);
    } catch {
      body = undefined;
    }
    const identity = body === undefined ? null : provider.identify({ headers: item.headers, body });
    // The gateway's rules for ids and types hold for replayed events too.
    const refused = identity?.ok && 'event' in identity ? identityProblem(identity.event) : null;
    if (!identity?.ok || !('event' in identity) || refused) {
      unusable += 1;
      if (problems.length < 20)
        problems.push(
          refused
            ? refused.message
            : identity && !identity.ok
              ? identity.message
              : 'the API returned no usable JSON event',
        );
      continue;
    }
    claims.push({
      endpoint: endpointName,
      provider: provider.name,
      event: identity.event,
      body: item.body,
      traceparent: null,
      receivedVia: options.receivedVia,
      payloadSearch: options.payloadSearch,
    });
  }
  if (options.dryRun || !boss) {
    const found = await presentInInbox(pool, endpointName, claims);
    const { seen } = options;
    for (const row of found) {
      const id = `id:${claims[row.ord - 1]!.event.eventId}`;
      const digest = row.digest ? `digest:${row.digest.toString('hex')}` : null;
      if (row.present || seen.has(id) || (digest !== null && seen.has(digest))) present += 1;
      else fresh += 1;
      seen.add(id);
      if (digest !== null) seen.add(digest);
    }
  } else if (claims.length > 0) {
    const results = await claimBatch(pool, boss, claims);
    for (const result of results) {
      if (!result.ok) throw result.error;
      if (result.outcome === 'accepted') fresh += 1;
      else present += 1;
    }
  }
  return { new: fresh, present, unusable, problems };
}

/**
 * Pulls the window's events from the provider's API and feeds them through the gateway's claim
 * (claimFetchedPage), flagged `received_via = 'api_replay'`. A dry run only counts.
 */
export async function replayEvents(
  pool: pg.Pool,
  boss: PgBoss | null,
  endpointName: string,
  endpoint: EndpointConfig,
  source: ReplaySource,
  window: ReplayWindow,
  options: ReplayOptions,
): Promise<ReplayReport> {
  // Before anything is fetched: a refused window costs no API request.
  const horizon = await checkDedupeHorizon(pool, {
    since: window.since,
    now: options.now ?? Date.now(),
    horizonMs: options.horizonMs,
    force: options.force === true,
    action: 'replay',
    flag: '--since',
  });
  const provider = createProvider(endpoint);
  let fetched = 0;
  let fresh = 0;
  let present = 0;
  let unusable = 0;
  const problems: string[] = [];
  const seen = new Set<string>();
  for await (const page of source.pages(window)) {
    fetched += page.events.length;
    const counts = await claimFetchedPage(pool, boss, endpointName, provider, page.events, {
      dryRun: options.dryRun === true,
      receivedVia: 'api_replay',
      seen,
      payloadSearch: endpoint.payloadSearch,
    });
    fresh += counts.new;
    present += counts.present;
    unusable += counts.unusable;
    problems.push(...counts.problems.slice(0, 20 - problems.length));
    options.onPage?.(fetched);
  }
  await recordAction(pool, {
    actor: options.actor,
    command: 'replay',
    endpoint: endpointName,
    filters: {
      since: window.since.toISOString(),
      until: window.until.toISOString(),
      fetched,
      already_present: present,
      unusable,
      dedupe_safe_since: horizon.safeSince.toISOString(),
      ...(horizon.beyond ? { forced_past_dedupe_horizon: true } : {}),
    },
    count: fresh,
    dryRun: options.dryRun === true || !boss,
  });
  return { fetched, new: fresh, alreadyPresent: present, unusable, problems };
}

/** Refuses a window that is empty or in the future. */
export function checkWindow(window: ReplayWindow, now = Date.now()): void {
  if (window.until.getTime() <= window.since.getTime()) {
    throw new HookgateError('usage_invalid', '--until must be after --since.');
  }
  if (window.since.getTime() > now) {
    throw new HookgateError('usage_invalid', '--since is in the future.');
  }
}
