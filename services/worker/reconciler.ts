import type pg from 'pg';
import type { Job, PgBoss } from 'pg-boss';
import type { Config } from '../core/config/schema.ts';
import { describeError, HookgateError } from '../core/errors.ts';
import type { Logger } from '../core/logging.ts';
import { reconcileEndpoint } from '../core/reconcile/run.ts';
import {
  ensureReconcileQueue,
  queueDueRuns,
  RECONCILE_QUEUE,
  type ReconcileJobData,
  reconcilingEndpoints,
} from '../core/reconcile/schedule.ts';
import { replaySourceFor } from '../core/replay/source-for.ts';

export interface ReconcilerOptions {
  readonly config: Config;
  readonly pool: pg.Pool;
  readonly boss: PgBoss;
  readonly logger: Logger;
  readonly env?: NodeJS.ProcessEnv;
  /** How often this worker queues the runs that are due (default 15 s). */
  readonly tickMs?: number;
}

/**
 * The worker's share of continuous reconciliation (docs/reconcile.md): every tick it queues the
 * runs that are due (pg-boss keeps one per endpoint and slot, whichever worker queues it), and it
 * works the queue one run at a time. The queue's policy lets one run per endpoint be active at
 * once across all workers; the run's lease also keeps out a `hookgate reconcile` started by hand.
 */
export async function startReconciler(options: ReconcilerOptions): Promise<{ stop(): Promise<void> }> {
  const { config, pool, boss, logger } = options;
  const endpoints = reconcilingEndpoints(config);
  if (endpoints.length === 0) return { stop: async () => {} };
  await ensureReconcileQueue(boss);

  const stopping = new AbortController();
  const run = async ({ endpoint: endpointName, actor, since }: ReconcileJobData) => {
    const endpoint = config.endpoints[endpointName];
    if (!endpoint?.reconcile) {
      logger.warn(
        { endpoint: endpointName },
        'reconcile: a job for an endpoint that does not reconcile here',
      );
      return { skipped: 'not configured' };
    }
    try {
      const source = replaySourceFor(endpointName, endpoint, options.env ?? process.env);
      // An operator's run (queued by the API) is audited as theirs, as `hookgate reconcile` is.
      const report = await reconcileEndpoint(pool, boss, endpointName, endpoint, source, {
        signal: stopping.signal,
        horizonMs: config.dedupe.horizon,
        ...(actor !== undefined ? { actor } : {}),
        ...(since !== undefined ? { since: new Date(since) } : {}),
      });
      const line = {
        endpoint: endpointName,
        outcome: report.outcome,
        listed: report.listed,
        present: report.present,
        filled: report.filled,
        unusable: report.unusable,
        delivery_failures: report.deliveryFailures,
        api_calls: report.apiCalls,
        duration_ms: Math.round(report.durationMs),
        gap_free_until: report.watermark?.toISOString() ?? null,
      };
      if (report.outcome === 'failed' || report.outcome === 'lease_lost')
        logger.error({ ...line, error: report.error }, 'reconcile: run failed');
      else if (report.filled > 0) logger.warn(line, 'reconcile: found and filled missing events');
      else logger.info(line, 'reconcile: run finished');
      return { outcome: report.outcome, filled: report.filled };
    } catch (error) {
      if (error instanceof HookgateError && error.code === 'reconcile_busy') {
        logger.info({ endpoint: endpointName }, 'reconcile: another run holds the endpoint; skipped');
        return { skipped: 'busy' };
      }
      // Credentials missing, the database away: the job fails (no retry: the next slot runs).
      logger.error({ endpoint: endpointName, err: error }, `reconcile: ${describeError(error)}`);
      throw error;
    }
  };

  await boss.work<ReconcileJobData>(
    RECONCILE_QUEUE,
    { batchSize: 1, localConcurrency: 1, pollingIntervalSeconds: 2 },
    async ([job]: Job<ReconcileJobData>[]) => (job ? run(job.data) : null),
  );

  const tick = async () => {
    try {
      await queueDueRuns(boss, endpoints);
    } catch (error) {
      logger.warn({ err: error }, 'reconcile: could not queue the runs that are due');
    }
  };
  await tick();
  const timer = setInterval(() => void tick(), options.tickMs ?? 15_000);
  timer.unref();
  logger.info({ endpoints: endpoints.map((e) => e.name) }, 'reconcile: scheduled');

  return {
    async stop() {
      clearInterval(timer);
      // A run in flight stops before its next request; what it claimed stays claimed.
      stopping.abort();
      await boss.offWork(RECONCILE_QUEUE, { wait: true });
    },
  };
}
