import type pg from 'pg';
import { HookgateError } from '../errors.ts';
import type { Handler } from '../handlers/types.ts';
import type { Claim } from '../inbox/claim.ts';
import { dispatchEvents } from '../inbox/dispatch.ts';
import { pausedAmong } from '../pause/pause.ts';
import { applyEvents, type EngineDeps } from './engine.ts';

/**
 * Sync mode: the apply engine on the events a claim has just inserted, inside the claim's own
 * transaction (the request's), so the 2xx means "applied". Their rows carry no job. A failure
 * that retrying may fix throws: the claim rolls back, nothing of the delivery is stored, and the
 * provider gets a 503 and retries. An event that can never be applied (EventUnusable) is stored
 * `dead` with its reason and acknowledged: retrying it cannot help, and a verified delivery is
 * never dropped. A paused endpoint's events are not applied: they get a job (in this transaction)
 * and wait, as an async endpoint's do, for the resume.
 */
export async function applyInClaim(
  client: pg.PoolClient,
  deps: EngineDeps,
  handlers: ReadonlyMap<string, Handler>,
  accepted: readonly Claim[],
): Promise<void> {
  const byEndpoint = new Map<string, string[]>();
  for (const claim of accepted) {
    if (!handlers.has(claim.endpoint)) continue;
    const list = byEndpoint.get(claim.endpoint) ?? [];
    list.push(claim.event.eventId);
    byEndpoint.set(claim.endpoint, list);
  }
  const paused = await pausedAmong(client, [...byEndpoint.keys()]);
  for (const [endpoint, eventIds] of byEndpoint) {
    if (paused.has(endpoint)) {
      await dispatchEvents(
        deps.boss,
        client,
        endpoint,
        eventIds.map((eventId) => ({ eventId, attempts: 0 })),
        { keepAttempts: true },
      );
      continue;
    }
    const results = await applyEvents(client, deps, {
      endpoint,
      handler: handlers.get(endpoint)!,
      targets: eventIds.map((eventId) => ({ eventId, job: null, retryCount: 0 })),
      // The claim's provider retries; attempts are not counted toward an end here.
      maxAttempts: Number.POSITIVE_INFINITY,
    });
    const failed = results.find((result) => result.outcome === 'retry');
    if (failed) {
      throw new HookgateError('apply_failed', `The event could not be applied (${failed.error}); retry.`);
    }
  }
}
