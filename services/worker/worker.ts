import type pg from 'pg';
import type { PgBoss } from 'pg-boss';
import type { EventResult } from '../core/apply/engine.ts';
import type { ApplyMetrics } from '../core/apply/metrics.ts';
import { recordAttempts, THIS_WORKER } from '../core/attempts/attempts.ts';
import type { Config } from '../core/config/schema.ts';
import { routesFrom } from '../core/destinations/routes.ts';
import { createHandler } from '../core/handlers/index.ts';
import type { Handler } from '../core/handlers/types.ts';
import { failureFromOutput, jobOutputOf, lastErrorOf } from '../core/inbox/last-error.ts';
import { lostAlone, markAlone } from '../core/inbox/lost-attempts.ts';
import { recordBatchFailure } from '../core/inbox/rows.ts';
import type { Logger } from '../core/logging.ts';
import type { OutageLog } from '../core/outage-log.ts';
import { type HeldJob, heartbeatRefreshMs, startHeartbeat } from '../core/queue/heartbeat.ts';
import { applyQueue, eventIdsOf } from '../core/queue/names.ts';
import { heartbeatSecondsFrom } from '../core/queue/queues.ts';
import { applyJobs, type FetchedJob, type JobPart, type JobPolicy, keepWithinBatch } from './apply.ts';
import { startPartitionKeeper } from './partition-keeper.ts';
import { PauseWatch } from './pause-watch.ts';
import { type Solo, SoloGate } from './solo-gate.ts';
import { startSweeper } from './sweeper.ts';
import { Waker } from './waker.ts';
import { listenForWakeups } from './wakeup-listener.ts';

export interface WorkerOptions {
  readonly config: Config;
  /** Apply transactions run on this pool (one connection per in-flight batch). */
  readonly pool: pg.Pool;
  /** A started pg-boss; a worker's instance should supervise (expiry, lost heartbeats). */
  readonly boss: PgBoss;
  readonly logger: Logger;
  /** Directory of the config file, for `module:` handlers. */
  readonly configDir: string;
  readonly metrics?: ApplyMetrics | null;
  /** Counts the loops' failures while the database is unreachable, instead of a line each. */
  readonly outage?: OutageLog;
  /** Only these endpoints (default: all configured). */
  readonly endpoints?: readonly string[];
}

export interface RunningWorker {
  /**
   * Stops fetching and waits up to worker.shutdownTimeout for in-flight batches. Anything still
   * running after that is abandoned uncommitted: its jobs expire and are retried.
   */
  stop(): Promise<void>;
}

const ERROR_BACKOFF_MS = 1_000;

/** A fetched job, and whether its previous try was lost with its worker (never reported). */
interface Fetched extends FetchedJob {
  readonly lost: boolean;
}

/**
 * How many jobs to fetch for about `batchSize` events: a job carries one claim batch of an
 * endpoint (one event when traffic is light, dozens under load), so the count follows a running
 * mean of events per job.
 */
class JobsPerFetch {
  // Starts as if jobs were full (one job first): events fetched beyond a batch are handed back.
  #mean: number;
  readonly #batchSize: number;

  constructor(batchSize: number) {
    this.#batchSize = batchSize;
    this.#mean = batchSize;
  }

  get count(): number {
    return Math.max(1, Math.min(this.#batchSize, Math.floor(this.#batchSize / this.#mean)));
  }

  observe(jobs: readonly FetchedJob[]): void {
    const events = jobs.reduce((sum, job) => sum + job.eventIds.length, 0);
    this.#mean = 0.5 * this.#mean + 0.5 * Math.max(1, events / jobs.length);
  }
}

export async function startWorker(options: WorkerOptions): Promise<RunningWorker> {
  const { config, pool, boss, logger } = options;
  const metrics = options.metrics ?? null;
  const names = options.endpoints ?? Object.keys(config.endpoints);
  const handlers = new Map<string, Handler>();
  for (const name of names) {
    const endpoint = config.endpoints[name];
    if (!endpoint) throw new Error(`unknown endpoint ${name}`);
    handlers.set(
      name,
      await createHandler(endpoint.handler, endpoint.options, {
        endpoint: name,
        logger: logger.child({ endpoint: name }),
        configDir: options.configDir,
      }),
    );
  }

  const { batchSize, concurrency, pollingInterval } = config.worker;
  const policy: JobPolicy = {
    maxAttempts: config.worker.retryLimit + 1,
    retryDelaySeconds: config.worker.retryDelay / 1000,
    retryDelayMaxSeconds: config.worker.retryDelayMax / 1000,
  };
  let stopping = false;
  const waker = new Waker();
  const heartbeatSeconds = heartbeatSecondsFrom(config.worker);
  // The per-event line carries identifiers and an outcome only, fields no redaction path can
  // match: it skips pino's redaction, which otherwise walks every line (as the gateway's
  // per-delivery line does). Lines with an error keep it.
  const deps = {
    pool,
    boss,
    logger: logger.child({}, { redact: [] }),
    metrics,
    destinations: routesFrom(config),
  };

  /**
   * Runs `work` while keeping the fetched jobs' heartbeat fresh, so the supervisor takes them back
   * from a dead worker within worker.heartbeat but never from this live one.
   */
  const holding = async <T>(queue: string, jobs: readonly HeldJob[], work: () => Promise<T>): Promise<T> => {
    if (heartbeatSeconds === null) return work();
    const heartbeat = startHeartbeat({
      boss,
      queue,
      jobs,
      everyMs: heartbeatRefreshMs(heartbeatSeconds),
      onLost: (ids) =>
        // The fence makes this attempt's complete/fail a no-op and the row lock keeps the effect
        // single; it only means the batch ran past its heartbeat (e.g. a blocked event loop).
        logger.warn(
          { queue, jobs: ids },
          'jobs lost their heartbeat while in flight; another attempt has them',
        ),
      onError: (error) => logger.warn({ err: error, queue }, 'could not refresh job heartbeats'),
    });
    try {
      return await work();
    } finally {
      await heartbeat.stop();
    }
  };

  /**
   * Applies a group of fetched jobs in one transaction. If the transaction itself fails (nothing
   * committed), the jobs are failed now (fenced) rather than left to expire: pg-boss tries them
   * again with the queue's backoff.
   */
  const applyGroup = async (
    endpoint: string,
    handler: Handler,
    jobs: readonly (FetchedJob | JobPart)[],
  ): Promise<EventResult[] | null> => {
    const started = process.hrtime.bigint();
    try {
      return await applyJobs(deps, endpoint, handler, jobs, policy);
    } catch (error) {
      const events = jobs.flatMap((job) =>
        job.eventIds.map((eventId) => ({ eventId, retryCount: job.retryCount })),
      );
      if (!options.outage?.failed('worker apply', error))
        logger.error(
          { err: error, endpoint, events: events.length },
          'apply batch failed; its jobs are failed (tried again while attempts remain)',
        );
      const failure = { code: 'batch_failed', message: (error as Error).message, permanent: false };
      await recordBatchFailure(pool, endpoint, events, lastErrorOf(failure))
        .then((counted) =>
          // The attempt history too: its transaction, where the engine writes it, rolled back.
          recordAttempts(pool, endpoint, {
            worker: THIS_WORKER,
            durationMs: Number(process.hrtime.bigint() - started) / 1e6,
            records: counted.map(({ eventId, attempts }) => ({
              eventId,
              attempt: attempts,
              outcome: 'failed',
              errorCode: failure.code,
              errorMessage: failure.message,
            })),
          }),
        )
        .catch((recordError: unknown) => {
          if (!options.outage?.failed('worker apply', recordError))
            logger.error({ err: recordError }, 'could not record the batch failure');
        });
      await boss
        .fail(
          applyQueue(endpoint),
          jobs.map(({ id, retryCount }) => ({ id, retryCount })),
          jobOutputOf(failure),
        )
        .catch((failError: unknown) => {
          if (!options.outage?.failed('worker apply', failError))
            logger.error({ err: failError }, 'could not fail jobs; they will expire');
        });
      return null;
    }
  };

  /**
   * Lone applies (events whose previous attempt died with its worker) run one at a time in a
   * process. The mark a lone apply leaves when the process dies blames that event; two lone
   * applies running at once in two loops would both be blamed for one crasher (the innocent one
   * then waits for a solo turn it did not need).
   */
  let loneTurn: Promise<void> = Promise.resolve();
  const oneLoneApplyAtATime = async <T>(apply: () => Promise<T>): Promise<T> => {
    const previous = loneTurn;
    let release: () => void = () => {};
    loneTurn = new Promise<void>((resolve) => {
      release = resolve;
    });
    await previous;
    try {
      return await apply();
    } finally {
      release();
    }
  };

  /**
   * A job whose previous try was lost with its worker may carry an event that crashes the
   * process: its events are applied one per transaction, and the job is completed after the last.
   * The events a worker already died applying alone (the suspects, `crashed`) come last, each
   * with nothing else in flight in the process (`solo`): a crashing event then costs its
   * neighbours at most the attempts it shared with them before it was marked.
   */
  const applyAlone = async (
    endpoint: string,
    handler: Handler,
    job: Fetched,
    crashed: ReadonlySet<string>,
    solo: Solo,
  ): Promise<void> => {
    const applyOne = async (eventId: string) => {
      if (crashed.has(eventId))
        logger.warn(
          { endpoint, event_id: eventId, attempt: job.retryCount + 1 },
          'applying an event that a worker died applying before, with nothing else in flight',
        );
      const unmark = await markAlone(pool, endpoint, eventId).catch((error: unknown) => {
        logger.warn({ err: error, endpoint, event_id: eventId }, 'could not mark a lone apply');
        return async () => {};
      });
      const result = await applyGroup(endpoint, handler, [{ ...job, eventIds: [eventId], completes: false }]);
      await unmark().catch((error: unknown) =>
        logger.warn({ err: error, endpoint, event_id: eventId }, 'could not clear a lone-apply mark'),
      );
      return result;
    };
    for (const eventId of job.eventIds.filter((id) => !crashed.has(id))) {
      // The job was failed for a retry (its transaction failed): the rest waits for that retry.
      if ((await oneLoneApplyAtATime(() => applyOne(eventId))) === null) return;
    }
    for (const eventId of job.eventIds.filter((id) => crashed.has(id))) {
      if ((await solo(() => applyOne(eventId))) === null) return;
    }
    await boss.complete(applyQueue(endpoint), [{ id: job.id, retryCount: job.retryCount }]);
  };

  /**
   * The lost jobs of one fetch, those without a suspect first: a suspect's crash then takes no
   * job of the same fetch with it that could have been finished before.
   */
  const applyLost = async (endpoint: string, handler: Handler, lost: readonly Fetched[], solo: Solo) => {
    if (lost.length === 0) return;
    // The marks only order the lone applies; if they cannot be read (e.g. a row still locked by
    // a stalled attempt past the statement timeout), apply without them.
    const crashed = await lostAlone(
      pool,
      endpoint,
      lost.flatMap((job) => job.eventIds),
    ).catch((error: unknown) => {
      logger.warn({ err: error, endpoint }, 'could not read which events crashed a worker');
      return new Set<string>();
    });
    const suspect = (job: Fetched) => job.eventIds.some((eventId) => crashed.has(eventId));
    for (const job of [...lost.filter((j) => !suspect(j)), ...lost.filter(suspect)])
      await applyAlone(endpoint, handler, job, crashed, solo);
  };

  const gate = new SoloGate();
  const perFetch = new Map<string, JobsPerFetch>();
  const pauses = new PauseWatch(pool);

  /** One fetch-and-apply step; returns whether it fetched a full load (more is waiting). */
  const applyStep = async (endpoint: string, handler: Handler, solo: Solo): Promise<boolean> => {
    // A paused endpoint's jobs stay queued, in order, until it is resumed (its NOTIFY wakes us).
    if (await pauses.paused(endpoint)) return false;
    const queue = applyQueue(endpoint);
    const sizing = perFetch.get(endpoint) ?? new JobsPerFetch(batchSize);
    perFetch.set(endpoint, sizing);
    const wanted = sizing.count;
    // fetch commits on its own: the attempt is counted before any work, so an event that kills
    // the process every time still runs out of attempts.
    const fetched = await boss.fetch(queue, { batchSize: wanted, includeMetadata: true });
    if (fetched.length === 0) return false;
    const jobs: Fetched[] = fetched.map((job) => ({
      id: job.id,
      retryCount: job.retryCount,
      eventIds: eventIdsOf(job.data),
      lost: job.retryCount > 0 && failureFromOutput(job.output) === null,
    }));
    sizing.observe(jobs);
    await holding(queue, jobs, async () => {
      // A worker holds no more events than one batch: a lost worker then costs an attempt only
      // to the events it had in flight. Any beyond go back in new jobs, charged nothing.
      const kept = await keepWithinBatch(deps, endpoint, jobs, batchSize).catch((error: unknown) => {
        if (!options.outage?.failed('worker apply', error))
          logger.warn(
            { err: error, endpoint },
            'could not hand back the events beyond one batch; applying all',
          );
        return jobs;
      });
      const together = kept.filter((job) => !job.lost);
      if (together.length > 0) await applyGroup(endpoint, handler, together);
      await applyLost(
        endpoint,
        handler,
        kept.filter((job) => job.lost),
        solo,
      );
    });
    return fetched.length >= wanted;
  };

  const loop = async (endpoint: string, step: () => Promise<boolean>): Promise<void> => {
    while (!stopping) {
      let full = false;
      const seen = options.outage?.failuresSeen;
      try {
        full = await step();
        // The step handles some failures itself (it then returns normally): reaching the
        // database is shown only by a step during which no failure was counted.
        if (options.outage?.failuresSeen === seen) options.outage?.recovered();
      } catch (error) {
        if (stopping) break;
        if (!options.outage?.failed('worker apply loop', error))
          logger.error({ err: error, endpoint }, 'worker step failed');
        await waker.sleep(ERROR_BACKOFF_MS);
        continue;
      }
      // A full fetch means more is waiting: fetch again at once.
      if (!full && !stopping) await waker.sleep(pollingInterval, endpoint);
    }
  };

  const loops: Promise<void>[] = [];
  for (const [endpoint, handler] of handlers) {
    for (let i = 0; i < concurrency; i += 1)
      loops.push(loop(endpoint, () => gate.step((solo) => applyStep(endpoint, handler, solo))));
  }
  const sweeper = startSweeper({
    pool,
    boss,
    logger,
    endpoints: [...handlers.keys()],
    intervalMs: config.worker.sweepInterval,
    maxAttempts: policy.maxAttempts,
    outage: options.outage,
    onEnded: (endpoint, ended) => {
      for (const row of ended) metrics?.eventsApplied.inc({ endpoint, event_type: '', outcome: row.status });
    },
  });
  const keeper = startPartitionKeeper({ pool, logger, outage: options.outage });
  const listener = listenForWakeups(pool.options, (endpoint) => waker.wake(endpoint), logger);
  logger.info({ endpoints: names, batch_size: batchSize, concurrency }, 'worker started');

  return {
    async stop() {
      stopping = true;
      await sweeper.stop();
      await keeper.stop();
      await listener.stop();
      waker.wakeAll();
      let timer: NodeJS.Timeout | undefined;
      const finished = await Promise.race([
        Promise.all(loops).then(() => true),
        new Promise<boolean>((resolve) => {
          timer = setTimeout(() => resolve(false), config.worker.shutdownTimeout);
        }),
      ]);
      clearTimeout(timer);
      if (finished) logger.info('worker stopped');
      else logger.warn('worker stopped with batches still in flight; their jobs will expire and retry');
    },
  };
}
