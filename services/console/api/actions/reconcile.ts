import { z } from 'zod';
import { recordAction } from '../../../core/audit/audit.ts';
import { HookgateError } from '../../../core/errors.ts';
import { liveRuns, requestRun } from '../../../core/reconcile/schedule.ts';
import type { ApiAction } from '../action-runner.ts';
import { requireEndpoint } from '../lookups.ts';
import { pointInTime } from '../params.ts';

// Starting a reconciliation run (`hookgate reconcile --endpoint`): queued for the workers
// (services/core/reconcile/schedule.ts), who hold the provider's credentials and record the run,
// as this caller's, with its figures. The request itself is audited as `reconcile start`.

const body = z.strictObject({ since: pointInTime(() => Date.now()).optional() });

export const startReconcileAction: ApiAction<z.output<typeof body>> = {
  body,
  async run(call) {
    const endpoint = requireEndpoint(call.endpoints, call.params.endpoint!);
    if (!call.config.endpoints[endpoint]?.reconcile) {
      throw new HookgateError(
        'usage_invalid',
        `Endpoint ${endpoint} does not reconcile: add endpoints.${endpoint}.reconcile (docs/reconcile.md).`,
      );
    }
    const live = await liveRuns(call.pool, endpoint);
    const since = call.body.since;
    const record = (count: number, jobId: string | null) =>
      recordAction(call.pool, {
        actor: call.actor,
        command: 'reconcile start',
        endpoint,
        filters: {
          ...(since ? { since: since.toISOString() } : {}),
          job: jobId,
          already_waiting: live.waiting,
        },
        count,
        dryRun: call.dryRun,
      });
    if (call.dryRun) {
      await record(live.waiting ? 0 : 1, live.waiting);
      return {
        result: {
          action: 'reconcile start',
          dry_run: true,
          count: live.waiting ? 0 : 1,
          ids: [],
          job_id: live.waiting,
          message: live.waiting
            ? `A run of ${endpoint} waits already (job ${live.waiting}): none would be queued.`
            : `Would queue a reconciliation run of ${endpoint} for the workers${live.running ? ', after the one running now' : ''} (dry run, nothing changed).`,
        },
      };
    }
    const jobId = live.waiting ? null : await requestRun(call.pool, endpoint, { actor: call.actor, since });
    const waiting = jobId ?? live.waiting ?? (await liveRuns(call.pool, endpoint)).waiting;
    await record(jobId ? 1 : 0, jobId ?? waiting);
    return {
      status: jobId ? 202 : 200,
      result: {
        action: 'reconcile start',
        dry_run: false,
        count: jobId ? 1 : 0,
        ids: jobId ? [jobId] : [],
        job_id: jobId ?? waiting,
        message: jobId
          ? `Queued a reconciliation run of ${endpoint} (job ${jobId}); GET /api/v1/reconcile shows how it ends.`
          : `A run of ${endpoint} waits already${waiting ? ` (job ${waiting})` : ''}: it runs first, so none was queued.`,
      },
    };
  },
};
