import type pg from 'pg';
import type { PgBoss } from 'pg-boss';
import type { EndpointConfig } from '../config/schema.ts';
import { HookgateError } from '../errors.ts';
import { type Claim, claimBatch } from '../inbox/claim.ts';
import { createProvider } from '../providers/index.ts';
import type { ReplaySource, ReplayWindow } from './types.ts';

export interface ReplayReport {
  /** Events the API returned in the window (redeliveries of one event included). */
  readonly fetched: number;
  /** Stored now: they were missing, and are applied like any delivery. */
  readonly new: number;
  /** Already in the inbox (or a redelivery of one fetched earlier): absorbed. */
  readonly alreadyPresent: number;
  /** Returned by the API but without what hookgate needs to store it (an id, a type). */
  readonly unusable: number;
  /** Up to 20 reasons for the unusable ones. */
  readonly problems: readonly string[];
}

const PRESENT = `
  SELECT event_id FROM hookgate.inbox WHERE endpoint = $1 AND event_id = ANY($2::text[])`;

export interface ReplayOptions {
  readonly dryRun?: boolean;
  readonly onPage?: (fetchedSoFar: number) => void;
}

/**
 * Pulls the window's events from the provider's API and feeds them through the gateway's claim
 * (claimBatch): the inbox's key absorbs what is already there, the rest is stored with its job
 * and flagged `received_via = 'api_replay'`. A dry run only counts.
 */
export async function replayEvents(
  pool: pg.Pool,
  boss: PgBoss | null,
  endpointName: string,
  endpoint: EndpointConfig,
  source: ReplaySource,
  window: ReplayWindow,
  options: ReplayOptions = {},
): Promise<ReplayReport> {
  const provider = createProvider(endpoint);
  let fetched = 0;
  let fresh = 0;
  let present = 0;
  let unusable = 0;
  const problems: string[] = [];
  const seen = new Set<string>();
  for await (const page of source.pages(window)) {
    fetched += page.length;
    const claims: Claim[] = [];
    for (const item of page) {
      let body: unknown;
      try {
        body = JSON.parse(item.body);
      } catch {
        body = undefined;
      }
      const identity = body === undefined ? null : provider.identify({ headers: item.headers, body });
      if (!identity?.ok || !('event' in identity)) {
        unusable += 1;
        if (problems.length < 20)
          problems.push(
            identity && !identity.ok ? identity.message : 'the API returned no usable JSON event',
          );
        continue;
      }
      claims.push({
        endpoint: endpointName,
        provider: provider.name,
        event: identity.event,
        body: item.body,
        traceparent: null,
        receivedVia: 'api_replay',
      });
    }
    if (options.dryRun || !boss) {
      const ids = [...new Set(claims.map((claim) => claim.event.eventId))].filter((id) => !seen.has(id));
      const found = new Set(
        (await pool.query<{ event_id: string }>(PRESENT, [endpointName, ids])).rows.map(
          (row) => row.event_id,
        ),
      );
      for (const claim of claims) {
        const id = claim.event.eventId;
        if (found.has(id) || seen.has(id)) present += 1;
        else fresh += 1;
        seen.add(id);
      }
    } else if (claims.length > 0) {
      const results = await claimBatch(pool, boss, claims);
      results.forEach((result) => {
        if (!result.ok) throw result.error;
        if (result.outcome === 'accepted') fresh += 1;
        else present += 1;
      });
    }
    options.onPage?.(fetched);
  }
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
