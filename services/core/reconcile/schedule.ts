import type { PgBoss } from 'pg-boss';
import type { Config } from '../config/schema.ts';
import type { Queryable } from '../db/pool.ts';
import { liveReconcileRuns } from '../queue/job-rows.ts';

/** One queue for every endpoint's reconciliation runs; a job's singletonKey is its endpoint. */
export const RECONCILE_QUEUE = 'hookgate.reconcile';

/** What a reconciliation job carries. */
export interface ReconcileJobData {
  readonly endpoint: string;
  /** An operator's run (the API): who asked, recorded with the run's figures in hookgate.audit. */
  readonly actor?: string;
  /** Start the listing here instead of the watermark minus lookback (`hookgate reconcile --since`). */
  readonly since?: string;
}

/** The endpoints that reconcile, with how often and when their alert fires (ms). */
export function reconcilingEndpoints(config: Config): { name: string; every: number; staleAfter: number }[] {
  return Object.entries(config.endpoints).flatMap(([name, endpoint]) =>
    endpoint.reconcile
      ? [{ name, every: endpoint.reconcile.every, staleAfter: endpoint.reconcile.staleAfter }]
      : [],
  );
}

/**
 * The queue's policy is `stately`: per singletonKey (the endpoint) at most one job queued and one
 * active, so however many workers poll it, one endpoint's runs never overlap and a run longer than
 * `every` leaves one run waiting, not a pile. No retries: the next slot is the retry. A worker
 * that dies mid-run loses its job within the heartbeat (then the next slot runs, and the run's
 * lease in hookgate.reconcile_state has expired by then or soon after). Finished jobs are kept two
 * days, longer than the longest `every` (1d), so the slot they filled stays filled.
 */
/** A run whose worker died loses its job this long after its last heartbeat. */
export const RECONCILE_HEARTBEAT_SECONDS = 30;

export async function ensureReconcileQueue(boss: PgBoss): Promise<void> {
  const options = {
    retryLimit: 0,
    // A run is bounded by its budget; an hour bounds a worker that stalls without dying.
    expireInSeconds: 3_600,
    deleteAfterSeconds: 2 * 86_400,
    retentionSeconds: 2 * 86_400,
  };
  await boss.createQueue(RECONCILE_QUEUE, {
    ...options,
    policy: 'stately',
    heartbeatSeconds: RECONCILE_HEARTBEAT_SECONDS,
  });
  await boss.updateQueue(RECONCILE_QUEUE, options);
}

/**
 * Queues the run of each endpoint's current slot (time cut in `every`-long slots): pg-boss keeps
 * one job per (endpoint, slot), so every worker may call this as often as it likes and each
 * endpoint still runs once per `every`. Returns the endpoints a job was queued for.
 */
export async function queueDueRuns(
  boss: PgBoss,
  endpoints: readonly { name: string; every: number }[],
): Promise<string[]> {
  const queued: string[] = [];
  for (const { name, every } of endpoints) {
    const data: ReconcileJobData = { endpoint: name };
    const id = await boss.send(RECONCILE_QUEUE, data, {
      singletonKey: name,
      singletonSeconds: Math.max(60, Math.round(every / 1000)),
    });
    if (id) queued.push(name);
  }
  return queued;
}

/** An endpoint's runs waiting and running now (a waiting one is the next to run). */
export async function liveRuns(
  db: Queryable,
  endpoint: string,
): Promise<{ readonly waiting: string | null; readonly running: string | null }> {
  const rows = await liveReconcileRuns(db, RECONCILE_QUEUE, endpoint);
  return {
    waiting: rows.find((row) => row.state === 'created' || row.state === 'retry')?.id ?? null,
    running: rows.find((row) => row.state === 'active')?.id ?? null,
  };
}

/**
 * An operator's run now (the API's): a job the workers take, as they take the scheduled ones (they
 * hold the provider's credentials; the console need not). The queue keeps at most one waiting per
 * endpoint whoever queued it: null when one waits already (it runs first, and soon).
 */
export async function requestRun(
  db: Queryable,
  endpoint: string,
  request: { readonly actor: string; readonly since?: Date | undefined },
): Promise<string | null> {
  // Through the baseline migration's function (request_reconcile_run), so the console's role may
  // queue this run and no other job: it writes no table of pg-boss's itself.
  const { rows } = await db.query<{ id: string | null }>(REQUEST_RUN, [
    endpoint,
    request.actor,
    request.since ?? null,
  ]);
  return rows[0]?.id ?? null;
}

const REQUEST_RUN = `SELECT hookgate.request_reconcile_run($1, $2, $3)::text AS id`;
