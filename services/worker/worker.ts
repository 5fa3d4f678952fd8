import type pg from 'pg';
import type { PgBoss } from 'pg-boss';
import type { Registry } from 'prom-client';
import { failureFromOutput, jobOutputOf, lastErrorOf } from '../core/apply/failure.ts';
import type { Config } from '../core/config/schema.ts';
import { createHandler } from '../core/handlers/index.ts';
import type { Handler } from '../core/handlers/types.ts';
import { lostAlone, markAlone } from '../core/inbox/lost-attempts.ts';
import { recordBatchFailure } from '../core/inbox/rows.ts';
import type { Logger } from '../core/logging.ts';
import type { OutageLog } from '../core/outage-log.ts';
import { type HeldJob, startHeartbeat } from '../core/queue/heartbeat.ts';
import { type ApplyJobData, applyQueue, deadLetterQueue } from '../core/queue/names.ts';
import { heartbeatSecondsFrom } from '../core/queue/queues.ts';
import { traceIdOf } from '../core/tracing.ts';
import { type ApplyJob, applyBatch } from './apply.ts';
import { type DeadLetterJob, settleDeadLetters } from './dead-letter.ts';
import { appliedOutcome, createWorkerMetrics, type WorkerMetrics } from './metrics.ts';
import { Waker } from './waker.ts';
import { listenForWakeups } from './wakeup-listener.ts';

export interface WorkerOptions {
  readonly config: Config;
  /** Apply transactions run on this pool (one connection per in-flight batch). */
  readonly pool: pg.Pool;
  /** A started pg-boss; a worker's instance should supervise (expiry, dead-lettering). */
  readonly boss: PgBoss;
  readonly logger: Logger;
  /** Directory of the config file, for `module:` handlers. */
  readonly configDir: string;
  readonly registry?: Registry;
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

export async function startWorker(options: WorkerOptions): Promise<RunningWorker> {
  const { config, pool, boss, logger } = options;
  const metrics: WorkerMetrics | null = options.registry ? createWorkerMetrics(options.registry) : null;
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
  let stopping = false;
  const waker = new Waker();
  const heartbeatSeconds = heartbeatSecondsFrom(config.worker);

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
      everyMs: (heartbeatSeconds * 1000) / 3,
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

  // The per-event line carries identifiers and an outcome only, fields no redaction path can
  // match: it skips pino's redaction, which otherwise walks every line (as the gateway's
  // per-delivery line does). Lines with an error keep it.
  const eventLog = logger.child({}, { redact: [] });

  /** Applies one group of fetched jobs in one transaction, and reports what happened. */
  const applyGroup = async (endpoint: string, handler: Handler, jobs: ApplyJob[]): Promise<void> => {
    const queue = applyQueue(endpoint);
    try {
      const result = await applyBatch({ pool, boss, logger }, endpoint, handler, jobs);
      const now = Date.now();
      const lastAttempt = new Set(jobs.filter((job) => job.lastAttempt).map((job) => job.eventId));
      metrics?.applyDuration.observe({ endpoint }, result.durationSeconds);
      for (const event of result.events) {
        const outcome = appliedOutcome(event.outcome);
        metrics?.eventsApplied.inc({ endpoint, event_type: event.eventType, outcome });
        if (event.receivedAt && (outcome === 'applied' || outcome === 'stale' || outcome === 'ignored')) {
          metrics?.endToEnd.observe({ endpoint }, (now - event.receivedAt.getTime()) / 1000);
        }
        // One line per apply outcome: identifiers and the outcome, never the payload.
        const line = {
          endpoint,
          event_id: event.eventId,
          event_type: event.eventType,
          outcome,
          trace_id: traceIdOf(event.traceparent),
        };
        if (outcome === 'retried' && lastAttempt.has(event.eventId))
          logger.warn(
            { ...line, error: event.error, last_attempt: true },
            'apply failed on its last attempt; the event ends parked or dead',
          );
        else if (outcome === 'retried')
          logger.warn({ ...line, error: event.error }, 'apply failed; will retry');
        else if (outcome === 'dead')
          logger.warn({ ...line, error: event.error }, 'apply failed for good; event is dead');
        else eventLog.info(line, 'event applied');
      }
    } catch (error) {
      // Nothing committed. Fail the attempts now (fenced) rather than waiting for expiry.
      if (!options.outage?.failed('worker apply', error))
        logger.error(
          { err: error, endpoint, jobs: jobs.length },
          'apply batch failed; its jobs are failed (retried while attempts remain)',
        );
      // The job's output carries the code the dead-letter step decides from; the row's
      // last_error (a separate statement that may fail too) is for people only.
      const failure = { code: 'batch_failed', message: (error as Error).message, permanent: false };
      await recordBatchFailure(pool, endpoint, jobs, lastErrorOf(failure)).catch((recordError: unknown) => {
        if (!options.outage?.failed('worker apply', recordError))
          logger.error({ err: recordError }, 'could not record the batch failure');
      });
      await boss
        .fail(
          queue,
          jobs.map(({ id, retryCount }) => ({ id, retryCount })),
          jobOutputOf(failure),
        )
        .catch((failError: unknown) => {
          if (!options.outage?.failed('worker apply', failError))
            logger.error({ err: failError }, 'could not fail jobs; they will expire');
        });
    }
  };

  /**
   * Lone applies (events whose previous attempt died with its worker) run one at a time in a
   * process. The mark a lone apply leaves when the process dies blames that event; two lone
   * applies running at once in two loops would both be blamed for one crasher, and an innocent
   * event marked so is then ordered with the crasher (by fetch order, possibly after it) until
   * both run out of attempts.
   */
  let loneTurn: Promise<void> = Promise.resolve();
  const oneLoneApplyAtATime = async (apply: () => Promise<void>): Promise<void> => {
    const previous = loneTurn;
    let release: () => void = () => {};
    loneTurn = new Promise<void>((resolve) => {
      release = resolve;
    });
    await previous;
    try {
      await apply();
    } finally {
      release();
    }
  };

  /**
   * One fetch-and-apply step; returns how many jobs it fetched. Jobs whose previous attempt was
   * lost with its worker (expired or heartbeat gone, never reported) may hold an event that
   * crashes the process: the others are applied first as one batch, then each of those alone,
   * the ones a worker already died applying alone last (services/core/inbox/lost-attempts.ts).
   * A crashing event then costs its neighbours at most the attempts it shared with them before.
   */
  const applyStep = async (endpoint: string, handler: Handler): Promise<number> => {
    const queue = applyQueue(endpoint);
    // fetch commits on its own: the attempt is counted before any work, so an event that kills
    // the process every time still runs out of attempts.
    const fetched = await boss.fetch<ApplyJobData>(queue, { batchSize, includeMetadata: true });
    if (fetched.length === 0) return 0;
    const jobs: ApplyJob[] = [];
    const lost: ApplyJob[] = [];
    for (const job of fetched) {
      const applyJob = {
        id: job.id,
        retryCount: job.retryCount,
        eventId: job.data.eventId,
        lastAttempt: job.retryCount >= job.retryLimit,
      };
      if (job.retryCount > 0 && failureFromOutput(job.output) === null) lost.push(applyJob);
      else jobs.push(applyJob);
    }
    await holding(queue, [...jobs, ...lost], async () => {
      if (jobs.length > 0) await applyGroup(endpoint, handler, jobs);
      if (lost.length === 0) return;
      // The marks only order the lone applies; if they cannot be read or written (e.g. a row
      // still locked by a stalled attempt past the statement timeout), apply without them.
      const crashed = await lostAlone(
        pool,
        endpoint,
        lost.map((job) => job.eventId),
      ).catch((error: unknown) => {
        logger.warn({ err: error, endpoint }, 'could not read which events crashed a worker');
        return new Set<string>();
      });
      const order = [
        ...lost.filter((job) => !crashed.has(job.eventId)),
        ...lost.filter((job) => crashed.has(job.eventId)),
      ];
      for (const job of order) {
        await oneLoneApplyAtATime(async () => {
          if (crashed.has(job.eventId))
            logger.warn(
              { endpoint, event_id: job.eventId, attempt: job.retryCount + 1 },
              'applying an event that a worker died applying before',
            );
          const unmark = await markAlone(pool, endpoint, job.eventId).catch((error: unknown) => {
            logger.warn({ err: error, endpoint, event_id: job.eventId }, 'could not mark a lone apply');
            return async () => {};
          });
          await applyGroup(endpoint, handler, [job]);
          await unmark().catch((error: unknown) =>
            logger.warn({ err: error, endpoint, event_id: job.eventId }, 'could not clear a lone-apply mark'),
          );
        });
      }
    });
    return fetched.length;
  };

  const deadLetterStep = async (endpoint: string): Promise<number> => {
    const queue = deadLetterQueue(endpoint);
    const fetched = await boss.fetch<ApplyJobData>(queue, {
      batchSize,
      includeMetadata: true,
    });
    if (fetched.length === 0) return 0;
    const jobs: DeadLetterJob[] = fetched.map((job) => ({
      id: job.id,
      retryCount: job.retryCount,
      eventId: job.data.eventId,
      sourceRetryCount: job.sourceRetryCount ?? 0,
      sourceOutput: job.sourceOutput,
    }));
    const exhausted = await holding(queue, jobs, () =>
      settleDeadLetters({ pool, boss, logger }, endpoint, jobs),
    );
    for (const e of exhausted) {
      metrics?.eventsApplied.inc({ endpoint, event_type: e.eventType ?? '', outcome: e.status });
    }
    return fetched.length;
  };

  const loop = async (what: string, endpoint: string, step: () => Promise<number>): Promise<void> => {
    while (!stopping) {
      let fetched = 0;
      try {
        fetched = await step();
        options.outage?.recovered();
      } catch (error) {
        if (stopping) break;
        if (!options.outage?.failed(`worker ${what} loop`, error))
          logger.error({ err: error, endpoint, loop: what }, 'worker step failed');
        await waker.sleep(ERROR_BACKOFF_MS);
        continue;
      }
      // A full batch means more is waiting: fetch again at once.
      if (fetched < batchSize && !stopping)
        await waker.sleep(pollingInterval, what === 'apply' ? endpoint : '');
    }
  };

  const loops: Promise<void>[] = [];
  for (const [endpoint, handler] of handlers) {
    for (let i = 0; i < concurrency; i += 1) {
      loops.push(loop('apply', endpoint, () => applyStep(endpoint, handler)));
    }
    loops.push(loop('dead-letter', endpoint, () => deadLetterStep(endpoint)));
  }
  const listener = listenForWakeups(pool.options, (endpoint) => waker.wake(endpoint), logger);
  logger.info({ endpoints: names, batch_size: batchSize, concurrency }, 'worker started');

  return {
    async stop() {
      stopping = true;
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
