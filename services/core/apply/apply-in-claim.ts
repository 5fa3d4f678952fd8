import type pg from 'pg';
import type { PgBoss } from 'pg-boss';
import { executorFor } from '../db/executor.ts';
import { HookgateError } from '../errors.ts';
import type { ApplyOutcome, Handler } from '../handlers/types.ts';
import type { Claim } from '../inbox/claim.ts';
import { lockForApply, settleApplied } from '../inbox/rows.ts';
import type { Logger } from '../logging.ts';
import { applyQueue, jobIdFor } from '../queue/names.ts';
import { failureOf, lastErrorOf } from './failure.ts';
import { inboxEvent, runHandler } from './run-handler.ts';

/**
 * Sync mode: applies freshly claimed events inside the claim transaction (the request's own),
 * settles their rows and completes their just-inserted jobs, so the 2xx means "applied". Any
 * handler failure throws, the claim rolls back, and the provider gets a 5xx and retries: nothing
 * of the delivery is stored.
 */
export async function applyInClaim(
  client: pg.PoolClient,
  boss: PgBoss,
  handlers: ReadonlyMap<string, Handler>,
  logger: Logger,
  accepted: readonly Claim[],
): Promise<void> {
  const byEndpoint = new Map<string, string[]>();
  for (const claim of accepted) {
    if (!handlers.has(claim.endpoint)) continue;
    const list = byEndpoint.get(claim.endpoint) ?? [];
    list.push(claim.event.eventId);
    byEndpoint.set(claim.endpoint, list);
  }
  const db = executorFor(client);
  for (const [endpoint, eventIds] of byEndpoint) {
    const handler = handlers.get(endpoint)!;
    const rows = await lockForApply(client, endpoint, eventIds);
    const settled: { eventId: string; status: ApplyOutcome; attempts: number }[] = [];
    for (const row of rows) {
      try {
        const outcome = await runHandler(client, boss, handler, logger, inboxEvent(endpoint, row, 1));
        settled.push({ eventId: row.event_id, status: outcome, attempts: 1 });
      } catch (error) {
        const text = lastErrorOf(failureOf(error));
        throw new HookgateError('apply_failed', `The event could not be applied (${text}); retry.`, {
          cause: error,
        });
      }
    }
    await settleApplied(client, endpoint, settled);
    // The job was inserted by this same transaction; completing it keeps a worker from re-running it.
    await boss.complete(
      applyQueue(endpoint),
      settled.map((s) => jobIdFor(endpoint, s.eventId)),
      null,
      { db, includeQueued: true },
    );
  }
}
