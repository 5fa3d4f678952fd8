import type { Request, Response } from 'express';
import { liveRuns } from '../../../core/reconcile/schedule.ts';
import { type ReconcileState, readStates } from '../../../core/reconcile/state-sql.ts';
import type { ApiContext } from '../context.ts';
import { iso } from '../params.ts';
import type { components } from '../schema.ts';

type Schemas = components['schemas'];

/**
 * GET /reconcile: `hookgate reconcile status` (readStates), every endpoint the configuration has
 * reconcile (those never run with zeros) and any other with a state, and whether a run waits or
 * runs now (the reconcile queue's live jobs).
 */
export async function getReconcileStatus(context: ApiContext, _req: Request, res: Response): Promise<void> {
  const states = new Map((await readStates(context.pool)).map((state) => [state.endpoint, state]));
  const names = new Set([
    ...states.keys(),
    ...context.endpoints.filter((name) => context.config.endpoints[name]?.reconcile !== undefined),
  ]);
  const items: Schemas['ReconcileStatus'][] = [];
  for (const endpoint of [...names].sort()) {
    const state: ReconcileState | undefined = states.get(endpoint);
    const live = await liveRuns(context.pool, endpoint);
    items.push({
      endpoint,
      gap_free_since: iso(state?.coveredSince),
      gap_free_until: iso(state?.watermark),
      running: state?.running === true || live.running !== null,
      waiting: live.waiting !== null,
      last_run_started_at: iso(state?.lastRunStartedAt),
      last_run_finished_at: iso(state?.lastRunFinishedAt),
      last_outcome: state?.lastOutcome ?? null,
      last_error: state?.lastError ?? null,
      last_success_at: iso(state?.lastSuccessAt),
      last_listed: state?.last.listed ?? 0,
      last_present: state?.last.present ?? 0,
      last_filled: state?.last.filled ?? 0,
      last_unusable: state?.last.unusable ?? 0,
      last_delivery_failures: state?.last.deliveryFailures ?? 0,
      last_api_calls: state?.last.apiCalls ?? 0,
      last_duration_ms: state?.last.durationMs ?? 0,
      missing_total: state?.missingTotal ?? 0,
      runs_total: state?.runsTotal ?? 0,
    });
  }
  const body: Schemas['ReconcileList'] = { items, next_cursor: null };
  res.json(body);
}
