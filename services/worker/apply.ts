import type pg from 'pg';
import type { PgBoss } from 'pg-boss';
import { failureOf, jobOutputOf, lastErrorOf } from '../core/apply/failure.ts';
import { collectingOutbox, insertOutboxJobs, type OutboxJob } from '../core/apply/outbox.ts';
import { inboxEvent, runHandler } from '../core/apply/run-handler.ts';
import { executorFor } from '../core/db/executor.ts';
import { withTransaction } from '../core/db/transaction.ts';
import { HookgateError } from '../core/errors.ts';
import type { ApplyOutcome, BatchEventResult, Handler, InboxEvent } from '../core/handlers/types.ts';
import {
  type Applied,
  attemptsOf,
  type Ended,
  type FailedAttempt,
  type InboxRow,
  lockForApply,
  settleBatch,
} from '../core/inbox/rows.ts';
import type { Logger } from '../core/logging.ts';
import { applyQueue } from '../core/queue/names.ts';
import {
  contextFromTraceparent,
  inSpan,
  setOutcome,
  spanAttributes,
  startSpan,
  traceparentOf,
} from '../core/tracing.ts';

/** An apply job as fetched: which event, and which attempt (for fencing and counting). */
export interface ApplyJob {
  readonly id: string;
  readonly retryCount: number;
  readonly eventId: string;
  /** No retry is left after this attempt (retryCount has reached the job's retryLimit). */
  readonly lastAttempt?: boolean;
}

/** What happened to each event of a batch, for metrics and logs. */
export interface AppliedEvent {
  readonly eventId: string;
  readonly eventType: string;
  /**
   * `already_settled` and `missing` complete the job without running the handler; `dead`: the
   * handler failed in a way retrying cannot fix (EventUnusable), settled at once.
   */
  readonly outcome: ApplyOutcome | 'failed' | 'dead' | 'already_settled' | 'missing';
  readonly receivedAt: Date | null;
  readonly error?: string;
  /** The inbox row's traceparent: its trace id joins the event's log lines to its trace. */
  readonly traceparent?: string | null;
}

export interface BatchResult {
  readonly events: readonly AppliedEvent[];
  readonly durationSeconds: number;
}

/** Sorting by entity, then version, keeps entity writes in one order across batches. */
function byEntity(a: InboxRow, b: InboxRow): number {
  const ka = `${a.entity_type ?? ''}\u0000${a.entity_id ?? ''}`;
  const kb = `${b.entity_type ?? ''}\u0000${b.entity_id ?? ''}`;
  if (ka !== kb) return ka < kb ? -1 : 1;
  const va = BigInt(a.entity_version ?? '0');
  const vb = BigInt(b.entity_version ?? '0');
  if (va !== vb) return va < vb ? -1 : 1;
  return a.event_id < b.event_id ? -1 : a.event_id > b.event_id ? 1 : 0;
}

export interface ApplyBatchDeps {
  readonly pool: pg.Pool;
  readonly boss: PgBoss;
  readonly logger: Logger;
}

/**
 * Applies one fetched batch in one transaction on its own connection: lock the rows, skip the
 * settled ones, run each pending event's handler, settle or record the failure, then complete
 * the good jobs and fail the bad ones with the same connection, and COMMIT once.
 * Completion and failure are fenced by `{ id, retryCount }`: an attempt whose job was meanwhile
 * expired and handed to another worker changes nothing in pg-boss, and the inbox row lock makes
 * the two attempts apply the event at most once between them.
 *
 * Handlers first run back to back under one savepoint for the batch: round trips, not SQL,
 * bound the apply rate, and a savepoint per event costs one more each. If any handler throws,
 * the batch rolls back to that savepoint (the row locks, taken before it, are kept) and runs
 * again with each event in its own savepoint, so a failing event never takes its neighbours
 * with it. Handlers must therefore tolerate running twice inside one attempt; they already
 * must tolerate retries.
 *
 * Throws only if the transaction itself failed (nothing was committed); the jobs then stay
 * active until they expire, or the caller fails them.
 */
export async function applyBatch(
  deps: ApplyBatchDeps,
  endpoint: string,
  handler: Handler,
  jobs: readonly ApplyJob[],
): Promise<BatchResult> {
  const started = process.hrtime.bigint();
  const queue = applyQueue(endpoint);
  const events = await withTransaction(deps.pool, async (client) => {
    const rows = await lockForApply(
      client,
      endpoint,
      jobs.map((job) => job.eventId),
    );
    const byEvent = new Map(rows.map((row) => [row.event_id, row]));
    const jobsByEvent = new Map<string, ApplyJob[]>();
    for (const job of jobs) {
      const list = jobsByEvent.get(job.eventId) ?? [];
      list.push(job);
      jobsByEvent.set(job.eventId, list);
    }

    const events: AppliedEvent[] = [];
    const good: ApplyJob[] = [];
    for (const job of jobs) {
      if (!byEvent.has(job.eventId)) {
        // Pruned or never committed: nothing to apply, and retrying cannot change that.
        deps.logger.warn({ endpoint, event_id: job.eventId }, 'apply job has no inbox row; completing it');
        good.push(job);
        events.push({ eventId: job.eventId, eventType: '', outcome: 'missing', receivedAt: null });
      }
    }
    const pending: InboxRow[] = [];
    for (const row of [...byEvent.values()].sort(byEntity)) {
      if (row.status === 'pending') {
        pending.push(row);
        continue;
      }
      good.push(...(jobsByEvent.get(row.event_id) ?? []));
      events.push({
        eventId: row.event_id,
        eventType: row.event_type,
        outcome: 'already_settled',
        receivedAt: row.received_at,
      });
    }

    let pass: PassResult | null = null;
    if (pending.length > 0) {
      const run = (isolated: boolean) =>
        applyPending(deps, client, endpoint, handler, pending, jobsByEvent, isolated);
      // Outside the savepoint: the locks must outlive a rollback to it (see Handler.lockBatch).
      if (handler.lockBatch) {
        await handler.lockBatch(
          client,
          pending.map((row) => inboxEvent(endpoint, row, attemptsFor(row, jobsByEvent))),
        );
      }
      await client.query('SAVEPOINT apply_batch');
      const batchForm = handler.applyBatch?.bind(handler);
      pass = batchForm
        ? await applyPendingAsBatch(deps, client, endpoint, batchForm, pending, jobsByEvent).catch(
            (error: unknown) => {
              deps.logger.warn(
                { endpoint, events: pending.length, err: error },
                'set-based apply failed; applying the batch event by event',
              );
              return null;
            },
          )
        : await run(false);
      // A handler that swallowed an SQL error leaves the transaction aborted; RELEASE then
      // fails, and the batch is redone event by event so only that event fails.
      if (pass !== null)
        pass = await client.query('RELEASE SAVEPOINT apply_batch').then(
          () => pass,
          () => null,
        );
      if (pass === null) {
        await client.query('ROLLBACK TO SAVEPOINT apply_batch');
        pass = await run(true);
      }
    }
    const settled = pass?.settled ?? [];
    const failures = pass?.failures ?? [];
    const unusable = pass?.dead ?? [];
    const bad = pass?.bad ?? [];
    good.push(...(pass?.good ?? []));
    events.push(...(pass?.events ?? []));

    await settleBatch(client, endpoint, { applied: settled, ended: unusable, failed: failures });
    const db = executorFor(client);
    if (pass && pass.outbox.length > 0) await insertOutboxJobs(deps.boss, db, pass.outbox);
    if (good.length > 0) {
      await deps.boss.complete(
        queue,
        good.map(({ id, retryCount }) => ({ id, retryCount })),
        null,
        { db },
      );
    }
    // One `fail` per distinct output (usually one): pg-boss stores one output for all the ids.
    const badByOutput = new Map<string, { output: { code: string; message: string }; jobs: ApplyJob[] }>();
    for (const { job, output } of bad) {
      const key = JSON.stringify([output.code, output.message]);
      const group = badByOutput.get(key) ?? { output, jobs: [] };
      group.jobs.push(job);
      badByOutput.set(key, group);
    }
    for (const { output, jobs: failing } of badByOutput.values()) {
      await deps.boss.fail(
        queue,
        failing.map(({ id, retryCount }) => ({ id, retryCount })),
        output,
        { db },
      );
    }
    return events;
  });
  return { events, durationSeconds: Number(process.hrtime.bigint() - started) / 1e9 };
}

interface PassResult {
  readonly settled: Applied[];
  readonly failures: FailedAttempt[];
  /** Failed for good (EventUnusable): settled `dead` now, their jobs completed. */
  readonly dead: Ended[];
  readonly good: ApplyJob[];
  /** Failed jobs with the output pg-boss keeps (the dead-letter step reads its code). */
  readonly bad: { job: ApplyJob; output: { code: string; message: string } }[];
  readonly events: AppliedEvent[];
  /** Outbox effects of the events that applied, inserted together before COMMIT. */
  readonly outbox: OutboxJob[];
}

/**
 * Runs the handler for each pending row. Not isolated: the first throw ends the pass (null)
 * and the caller rolls back. Isolated: each event runs in `apply_event`, one savepoint kept
 * open and renewed after each success (`RELEASE; SAVEPOINT` in one round trip; after
 * `ROLLBACK TO` it is still established).
 */
async function applyPending(
  deps: ApplyBatchDeps,
  client: pg.PoolClient,
  endpoint: string,
  handler: Handler,
  pending: readonly InboxRow[],
  jobsByEvent: ReadonlyMap<string, ApplyJob[]>,
  isolated: boolean,
): Promise<PassResult | null> {
  const result = emptyPass();
  if (isolated) await client.query('SAVEPOINT apply_event');
  for (const row of pending) {
    const rowJobs = jobsByEvent.get(row.event_id) ?? [];
    const attempts = attemptsOf(row.requeued_attempts, Math.max(...rowJobs.map((job) => job.retryCount)));
    // This event's effects; kept only if its apply is kept.
    const effects: OutboxJob[] = [];
    try {
      // webhook.apply continues the trace whose claim span the gateway stored on the row.
      const outcome = await inSpan(
        'webhook.apply',
        spanAttributes({ endpoint, event_id: row.event_id, event_type: row.event_type, attempt: attempts }),
        async (span) => {
          try {
            const settled = await runHandler(
              client,
              deps.boss,
              handler,
              deps.logger,
              inboxEvent(endpoint, row, attempts),
              effects,
            );
            setOutcome(span, settled === 'processed' ? 'applied' : settled);
            return settled;
          } catch (error) {
            setOutcome(span, failureOf(error).permanent ? 'dead' : 'retried');
            throw error;
          }
        },
        contextFromTraceparent(row.traceparent),
      );
      if (isolated) await client.query('RELEASE SAVEPOINT apply_event; SAVEPOINT apply_event');
      result.settled.push({ eventId: row.event_id, status: outcome, attempts });
      result.outbox.push(...effects);
      result.good.push(...rowJobs);
      result.events.push({
        eventId: row.event_id,
        eventType: row.event_type,
        outcome,
        receivedAt: row.received_at,
        traceparent: row.traceparent,
      });
    } catch (error) {
      if (!isolated) return null;
      await client.query('ROLLBACK TO SAVEPOINT apply_event');
      recordFailed(result, row, rowJobs, attempts, error);
    }
  }
  return result;
}

function emptyPass(): PassResult {
  return { settled: [], failures: [], dead: [], good: [], bad: [], events: [], outbox: [] };
}

/** Records one event's failure in a pass (its writes are already undone, or never happened). */
function recordFailed(
  result: PassResult,
  row: InboxRow,
  rowJobs: readonly ApplyJob[],
  attempts: number,
  error: unknown,
) {
  const failure = failureOf(error);
  const text = lastErrorOf(failure);
  if (failure.permanent) {
    result.dead.push({ eventId: row.event_id, status: 'dead', attempts, lastError: text });
    result.good.push(...rowJobs);
  } else {
    result.failures.push({ eventId: row.event_id, attempts, lastError: text });
    for (const job of rowJobs) result.bad.push({ job, output: jobOutputOf(failure) });
  }
  result.events.push({
    eventId: row.event_id,
    eventType: row.event_type,
    outcome: failure.permanent ? 'dead' : 'failed',
    receivedAt: row.received_at,
    error: text,
    traceparent: row.traceparent,
  });
  return failure;
}

const isFailed = (result: BatchEventResult): result is { readonly error: unknown } =>
  typeof result === 'object' && result !== null;

/** The attempt a pending row's apply is (its jobs' latest retry count, requeues included). */
function attemptsFor(row: InboxRow, jobsByEvent: ReadonlyMap<string, ApplyJob[]>): number {
  return attemptsOf(
    row.requeued_attempts,
    Math.max(...(jobsByEvent.get(row.event_id) ?? []).map((job) => job.retryCount)),
  );
}

/**
 * The set-based pass: the handler's `applyBatch` over all pending rows, in the per-event order.
 * Throws if the handler throws (the caller rolls back and reruns event by event). Events it
 * reports as failed wrote nothing, so they fail alone without a rollback. Each event still gets
 * its own `webhook.apply` span (covering the whole batch's statements), and its outbox effects
 * carry that span's traceparent.
 */
async function applyPendingAsBatch(
  deps: ApplyBatchDeps,
  client: pg.PoolClient,
  endpoint: string,
  batchForm: NonNullable<Handler['applyBatch']>,
  pending: readonly InboxRow[],
  jobsByEvent: ReadonlyMap<string, ApplyJob[]>,
): Promise<PassResult> {
  const attempts = pending.map((row) => attemptsFor(row, jobsByEvent));
  const events: InboxEvent[] = pending.map((row, n) => inboxEvent(endpoint, row, attempts[n]!));
  const spans = pending.map((row, n) =>
    startSpan(
      'webhook.apply',
      spanAttributes({ endpoint, event_id: row.event_id, event_type: row.event_type, attempt: attempts[n] }),
      contextFromTraceparent(row.traceparent),
    ),
  );
  const effects: OutboxJob[][] = pending.map(() => []);
  const position = new Map(events.map((event, n) => [event.eventId, n]));
  let results: readonly BatchEventResult[];
  try {
    results = await batchForm(
      {
        tx: client,
        logger: deps.logger.child({ endpoint }),
        outbox(event) {
          const n = position.get(event.eventId);
          if (n === undefined) {
            throw new HookgateError(
              'outbox_event_unknown',
              `event ${event.eventId} is not part of this batch`,
            );
          }
          return collectingOutbox(event, effects[n]!, traceparentOf(spans[n]!));
        },
      },
      events,
    );
    if (results.length !== events.length) {
      throw new HookgateError(
        'handler_batch_invalid',
        `applyBatch returned ${results.length} results for ${events.length} events`,
      );
    }
  } catch (error) {
    for (const span of spans) {
      setOutcome(span, 'retried', (error as Error).message);
      span.end();
    }
    throw error;
  }
  const result = emptyPass();
  for (const [n, row] of pending.entries()) {
    const rowJobs = jobsByEvent.get(row.event_id) ?? [];
    const span = spans[n]!;
    const settled = results[n];
    if (isFailed(settled)) {
      const failure = recordFailed(result, row, rowJobs, attempts[n]!, settled.error);
      setOutcome(span, failure.permanent ? 'dead' : 'retried', failure.message);
    } else {
      const outcome: ApplyOutcome = settled ?? 'processed';
      setOutcome(span, outcome === 'processed' ? 'applied' : outcome);
      result.settled.push({ eventId: row.event_id, status: outcome, attempts: attempts[n]! });
      result.outbox.push(...effects[n]!);
      result.good.push(...rowJobs);
      result.events.push({
        eventId: row.event_id,
        eventType: row.event_type,
        outcome,
        receivedAt: row.received_at,
        traceparent: row.traceparent,
      });
    }
    span.end();
  }
  return result;
}
