import type pg from 'pg';
import type { PgBoss } from 'pg-boss';
import { type AttemptOutcome, type AttemptRecord, THIS_WORKER } from '../attempts/attempts.ts';
import { insertDeliveries, type NewDelivery } from '../destinations/deliveries.ts';
import { type Route, type Routes, webhookIdFor } from '../destinations/routes.ts';
import { HookgateError } from '../errors.ts';
import { isTestEvent } from '../handlers/test-event.ts';
import type { ApplyOutcome, BatchEventResult, Handler, InboxEvent } from '../handlers/types.ts';
import { type Failure, lastErrorOf, PARKING_CODE } from '../inbox/last-error.ts';
import {
  type Applied,
  attemptOf,
  type Ended,
  type FailedAttempt,
  type InboxRow,
  lockForApply,
  settleBatch,
} from '../inbox/rows.ts';
import type { Logger } from '../logging.ts';
import {
  contextFromTraceparent,
  setOutcome,
  spanAttributes,
  startSpan,
  traceIdOf,
  withSpan,
} from '../tracing.ts';
import { failureOf } from './failure.ts';
import { type ApplyMetrics, appliedOutcome } from './metrics.ts';
import { collectingRouter } from './routing.ts';

// The apply engine: the one implementation of lock → skip what is settled or not this job's →
// apply → settle → deliveries to destinations, inside the caller's transaction. The worker calls
// it for the rows its jobs carry, sync mode for the rows its claim has just inserted, and the
// tests through both.

/** One event a caller asks to apply, and the dispatch it comes with. */
export interface ApplyTarget {
  readonly eventId: string;
  /** The job carrying it (null: a sync-mode claim applying its own rows). */
  readonly job: string | null;
  /** How many times that job was tried before (pg-boss's retryCount; 0 for a first try). */
  readonly retryCount: number;
}

export interface ApplyRequest {
  readonly endpoint: string;
  readonly handler: Handler;
  readonly targets: readonly ApplyTarget[];
  /**
   * Attempts an event may make (since its latest requeue); a failure of its last one ends it
   * (parked or dead).
   */
  readonly maxAttempts: number;
}

export interface EngineDeps {
  readonly boss: PgBoss;
  readonly logger: Logger;
  readonly metrics?: ApplyMetrics | null;
  /** Who applies, for the attempt history (default: this process, `host:pid`). */
  readonly worker?: string;
  /** Each endpoint's destinations (services/core/destinations/routes.ts): deliveries are written with the apply. */
  readonly destinations?: Routes | null;
}

/**
 * How each event of a request ended. `retry`: the attempt failed and the row stays pending, for
 * the caller to send again; `already_settled`, `superseded` (another job carries it now) and
 * `missing` (no row) were not applied and change nothing; `held` (a paused endpoint's, handed
 * back by the worker) neither.
 */
export type EventOutcome =
  | ApplyOutcome
  | 'retry'
  | 'parked'
  | 'dead'
  | 'already_settled'
  | 'superseded'
  | 'missing'
  /** Not applied: its endpoint is paused (the worker handed it back, charged nothing). */
  | 'held';

export interface EventResult {
  readonly eventId: string;
  readonly eventType: string;
  readonly outcome: EventOutcome;
  /** This attempt's number (0 when the event was not applied). */
  readonly attempts: number;
  readonly receivedAt: Date | null;
  /** `code: message` of a failed attempt. */
  readonly error?: string;
  /** The code of a failed attempt (`entity_not_yet_known` parks, anything else is dead). */
  readonly failureCode?: string;
  /** Ended because its attempts ran out (not because retrying could never help). */
  readonly lastAttempt?: boolean;
  /** Attempts it has left after this one (a `retry`). */
  readonly attemptsLeft?: number;
  readonly traceparent: string | null;
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

export function inboxEvent(endpoint: string, row: InboxRow, attempts: number): InboxEvent {
  return {
    endpoint,
    eventId: row.event_id,
    provider: row.provider,
    eventType: row.event_type,
    entityType: row.entity_type,
    entityId: row.entity_id,
    entityVersion: row.entity_version,
    payload: row.payload,
    headers: row.headers,
    receivedAt: row.received_at,
    attempts,
    traceparent: row.traceparent,
  };
}

/** A pending row to apply now, with its attempt's number. */
interface Pending {
  readonly row: InboxRow;
  readonly attempts: number;
}

/** One event's result in a pass: how it settles, or why it failed. */
type PassResult =
  /** `routed`: the destinations the handler routed the event to. */
  { readonly outcome: ApplyOutcome; readonly routed: readonly string[] } | { readonly failure: Failure };

/** The events a lost worker left past their last attempt end so, with what they last reported. */
function exhausted(row: InboxRow, attempts: number): Failure {
  const reported = /^([a-z0-9_]+): (.*)$/s.exec(row.last_error ?? '');
  if (reported) return { code: reported[1]!, message: reported[2]!, permanent: false };
  return {
    code: 'worker_lost',
    message: `the worker was lost during the last attempts (attempt ${attempts}); none reported an error`,
    permanent: false,
  };
}

/**
 * Applies a request's events in the caller's transaction and settles their rows. Handlers first
 * run over the whole batch under one savepoint (the set-based form where the handler has one,
 * else back to back); if any throws, the batch rolls back to that savepoint (row locks and the
 * handler's lockBatch locks, taken before it, are kept) and runs again with each event in a
 * savepoint of its own, so a failing event never takes its neighbours with it. Handlers must
 * therefore tolerate running twice inside one attempt, as they tolerate retries.
 *
 * Throws only when the transaction itself failed: the caller must roll back.
 */
export async function applyEvents(
  tx: pg.PoolClient,
  deps: EngineDeps,
  request: ApplyRequest,
): Promise<EventResult[]> {
  const started = process.hrtime.bigint();
  const { endpoint } = request;
  // An event may come with two jobs (one it was taken from, and the one carrying it now).
  const targets = new Map<string, ApplyTarget[]>();
  for (const target of request.targets) {
    const list = targets.get(target.eventId) ?? [];
    list.push(target);
    targets.set(target.eventId, list);
  }
  const rows = await lockForApply(tx, endpoint, [...targets.keys()]);
  const found = new Map(rows.map((row) => [row.event_id, row]));
  const results: EventResult[] = [];
  const skip = (eventId: string, row: InboxRow | undefined, outcome: EventOutcome) =>
    results.push({
      eventId,
      eventType: row?.event_type ?? '',
      outcome,
      attempts: 0,
      receivedAt: row?.received_at ?? null,
      traceparent: row?.traceparent ?? null,
    });
  const pending: Pending[] = [];
  const ended: Ended[] = [];
  for (const [eventId, given] of targets) {
    const row = found.get(eventId);
    // Only the job the row names may apply it.
    const target = row && given.find((t) => row.dispatch_job === t.job);
    if (!row) skip(eventId, row, 'missing');
    else if (row.status !== 'pending') skip(eventId, row, 'already_settled');
    else if (!target) skip(eventId, row, 'superseded');
    else {
      const attempts = attemptOf(row.dispatched_attempts, target.retryCount);
      const last = row.requeued_attempts + request.maxAttempts;
      if (attempts <= last) {
        pending.push({ row, attempts });
        continue;
      }
      // Only lost attempts (a worker that died, whose job pg-boss tried again) get here.
      const failure = exhausted(row, last);
      const status = failure.code === PARKING_CODE ? 'parked' : 'dead';
      ended.push({ eventId: row.event_id, status, attempts: last, lastError: lastErrorOf(failure) });
      results.push({
        eventId: row.event_id,
        eventType: row.event_type,
        outcome: status,
        attempts: last,
        receivedAt: row.received_at,
        error: lastErrorOf(failure),
        failureCode: failure.code,
        lastAttempt: true,
        traceparent: row.traceparent,
      });
    }
  }
  const applied: Applied[] = [];
  const failed: FailedAttempt[] = [];
  const deliveries: NewDelivery[] = [];
  const routes = deps.destinations?.get(endpoint);
  // Test deliveries never reach the handler: settled `ignored`, nothing else written.
  const real = pending.filter(({ row, attempts }) => {
    if (!isTestEvent({ provider: row.provider, eventType: row.event_type })) return true;
    applied.push({ eventId: row.event_id, status: 'ignored', attempts });
    results.push({
      eventId: row.event_id,
      eventType: row.event_type,
      outcome: 'ignored',
      attempts,
      receivedAt: row.received_at,
      traceparent: row.traceparent,
    });
    return false;
  });
  real.sort((a, b) => byEntity(a.row, b.row));
  if (real.length > 0) {
    const passes = await runPasses(tx, deps, request, real);
    for (const [n, { row, attempts }] of real.entries()) {
      const pass = passes[n]!;
      const base = {
        eventId: row.event_id,
        eventType: row.event_type,
        attempts,
        receivedAt: row.received_at,
        traceparent: row.traceparent,
      };
      if ('outcome' in pass) {
        applied.push({ eventId: row.event_id, status: pass.outcome, attempts });
        deliveries.push(...fanOut(routes, row, pass.outcome, pass.routed));
        results.push({ ...base, outcome: pass.outcome });
        continue;
      }
      const error = lastErrorOf(pass.failure);
      const last = pass.failure.permanent || attempts >= row.requeued_attempts + request.maxAttempts;
      if (last) {
        const status = !pass.failure.permanent && pass.failure.code === PARKING_CODE ? 'parked' : 'dead';
        ended.push({ eventId: row.event_id, status, attempts, lastError: error });
        results.push({
          ...base,
          outcome: status,
          error,
          failureCode: pass.failure.code,
          lastAttempt: !pass.failure.permanent,
        });
      } else {
        failed.push({ eventId: row.event_id, attempts, lastError: error });
        results.push({
          ...base,
          outcome: 'retry',
          error,
          failureCode: pass.failure.code,
          attemptsLeft: row.requeued_attempts + request.maxAttempts - attempts,
        });
      }
    }
  }
  await settleBatch(
    tx,
    endpoint,
    { applied, ended, failed },
    {
      worker: deps.worker ?? THIS_WORKER,
      durationMs: Number(process.hrtime.bigint() - started) / 1e6,
      records: results.flatMap(attemptRecord),
    },
  );
  // In the apply's transaction: a delivery exists only if its event's apply commits.
  await insertDeliveries(tx, endpoint, deliveries);
  report(deps, endpoint, results, Number(process.hrtime.bigint() - started) / 1e9);
  return results;
}

/** What the attempt history keeps of an event's result: nothing when it was not attempted. */
function attemptRecord(result: EventResult): AttemptRecord[] {
  const outcomes: Partial<Record<EventOutcome, AttemptOutcome>> = {
    processed: 'processed',
    ignored: 'ignored',
    stale: 'stale',
    retry: 'failed',
    parked: 'parked',
    dead: 'dead',
  };
  const outcome = outcomes[result.outcome];
  if (!outcome || result.attempts < 1) return [];
  const code = result.failureCode;
  const message =
    result.error && code && result.error.startsWith(`${code}: `)
      ? result.error.slice(code.length + 2)
      : result.error;
  return [
    { eventId: result.eventId, attempt: result.attempts, outcome, errorCode: code, errorMessage: message },
  ];
}

/**
 * The deliveries of an applied event: one per destination its handler routed it to (whatever
 * it settled as), and, if it was processed, one per destination routed by filter whose filter
 * matches it.
 */
function fanOut(
  routes: readonly Route[] | undefined,
  row: InboxRow,
  outcome: ApplyOutcome,
  routed: readonly string[],
): NewDelivery[] {
  if (!routes) return [];
  const event = { eventType: row.event_type, payload: row.payload };
  return routes
    .filter((route) =>
      route.settings.routedBy === 'handler'
        ? routed.includes(route.name)
        : outcome === 'processed' && route.filter(event).matches,
    )
    .map((route) => ({
      destination: route.name,
      eventId: row.event_id,
      eventType: row.event_type,
      webhookId: webhookIdFor(route.endpoint, row.event_id, route.name),
      // JSON, so no type and id pair can read as another (and no NUL, which text cannot hold).
      entityKey: row.entity_id === null ? null : JSON.stringify([row.entity_type, row.entity_id]),
      entityVersion: row.entity_version,
    }));
}

/** Metrics and one log line per event: identifiers and the outcome, never the payload. */
function report(deps: EngineDeps, endpoint: string, results: readonly EventResult[], seconds: number): void {
  const now = Date.now();
  deps.metrics?.applyDuration.observe({ endpoint }, seconds);
  for (const event of results) {
    const outcome = appliedOutcome(event.outcome);
    deps.metrics?.eventsApplied.inc({ endpoint, event_type: event.eventType, outcome });
    if (event.receivedAt && (outcome === 'applied' || outcome === 'stale' || outcome === 'ignored')) {
      deps.metrics?.endToEnd.observe({ endpoint }, (now - event.receivedAt.getTime()) / 1000);
    }
    const line = {
      endpoint,
      event_id: event.eventId,
      event_type: event.eventType,
      outcome,
      attempt: event.attempts,
      trace_id: traceIdOf(event.traceparent),
    };
    if (outcome === 'retried') deps.logger.warn({ ...line, error: event.error }, 'apply failed; will retry');
    else if (event.lastAttempt)
      deps.logger.warn(
        { ...line, error: event.error, last_attempt: true },
        `apply failed on its last attempt; the event is ${outcome}`,
      );
    else if (outcome === 'dead' || outcome === 'parked')
      deps.logger.warn({ ...line, error: event.error }, `apply failed for good; the event is ${outcome}`);
    else deps.logger.info(line, 'event applied');
  }
}

/** The batch pass, then, if it threw, the event-by-event pass. One result per pending event. */
async function runPasses(
  tx: pg.PoolClient,
  deps: EngineDeps,
  request: ApplyRequest,
  pending: readonly Pending[],
): Promise<PassResult[]> {
  const { endpoint, handler } = request;
  const events = pending.map(({ row, attempts }) => inboxEvent(endpoint, row, attempts));
  // Outside the savepoint: the locks must outlive a rollback to it (see Handler.lockBatch).
  if (handler.lockBatch) await handler.lockBatch(tx, events);
  await tx.query('SAVEPOINT apply_batch');
  let failure: unknown = null;
  let results: PassResult[] | null = await applyTogether(tx, deps, request, events).catch(
    (error: unknown) => {
      failure = error;
      if (events.length > 1) {
        deps.logger.warn(
          { endpoint, events: events.length, err: error },
          'batch apply failed; applying the batch event by event',
        );
      }
      return null;
    },
  );
  // A handler that swallowed an SQL error leaves the transaction aborted; RELEASE then fails, and
  // the batch is redone event by event so that only that event fails.
  if (results !== null) {
    results = await tx.query('RELEASE SAVEPOINT apply_batch').then(
      () => results,
      (error: unknown) => {
        failure = error;
        return null;
      },
    );
  }
  if (results !== null) return results;
  await tx.query('ROLLBACK TO SAVEPOINT apply_batch');
  // One event alone: its own failure, nothing to separate it from.
  if (events.length === 1) return [{ failure: failureOf(failure) }];
  return applyOneByOne(tx, deps, request, events);
}

/** A `webhook.apply` span per event, continuing the trace whose claim span the gateway stored. */
function spansFor(endpoint: string, events: readonly InboxEvent[]) {
  return events.map((event) =>
    startSpan(
      'webhook.apply',
      spanAttributes({
        endpoint,
        event_id: event.eventId,
        event_type: event.eventType,
        attempt: event.attempts,
      }),
      contextFromTraceparent(event.traceparent),
    ),
  );
}

function endSpan(span: ReturnType<typeof startSpan>, result: PassResult): void {
  if ('outcome' in result) setOutcome(span, result.outcome === 'processed' ? 'applied' : result.outcome);
  else setOutcome(span, result.failure.permanent ? 'dead' : 'retried', result.failure.message);
  span.end();
}

/**
 * Calls the handler for several events in one go: its set-based form, or its per-event form back
 * to back. Throws if the handler throws (the caller rolls back and reruns one by one). Events the
 * set-based form reports as failed wrote nothing, so they fail alone without a rollback.
 */
async function applyTogether(
  tx: pg.PoolClient,
  deps: EngineDeps,
  request: ApplyRequest,
  events: readonly InboxEvent[],
): Promise<PassResult[]> {
  const spans = spansFor(request.endpoint, events);
  const routed: string[][] = events.map(() => []);
  try {
    const settled = await callHandler(tx, deps, request, events, routed, spans);
    const results = settled.map(
      (result, n): PassResult =>
        isFailed(result)
          ? { failure: failureOf(result.error) }
          : { outcome: result ?? 'processed', routed: routed[n]! },
    );
    for (const [n, result] of results.entries()) endSpan(spans[n]!, result);
    return results;
  } catch (error) {
    for (const span of spans) {
      setOutcome(span, 'retried', (error as Error).message);
      span.end();
    }
    throw error;
  }
}

/** Each event in a savepoint of its own, renewed as `RELEASE; SAVEPOINT` in one round trip. */
async function applyOneByOne(
  tx: pg.PoolClient,
  deps: EngineDeps,
  request: ApplyRequest,
  events: readonly InboxEvent[],
): Promise<PassResult[]> {
  const results: PassResult[] = [];
  await tx.query('SAVEPOINT apply_event');
  for (const event of events) {
    const [span] = spansFor(request.endpoint, [event]);
    const routed: string[][] = [[]];
    let result: PassResult;
    try {
      const [settled] = await callHandler(tx, deps, request, [event], routed, [span!]);
      result = isFailed(settled)
        ? { failure: failureOf(settled.error) }
        : { outcome: settled ?? 'processed', routed: routed[0]! };
      await tx.query('RELEASE SAVEPOINT apply_event; SAVEPOINT apply_event');
    } catch (error) {
      await tx.query('ROLLBACK TO SAVEPOINT apply_event');
      result = { failure: failureOf(error) };
    }
    endSpan(span!, result);
    results.push(result);
  }
  await tx.query('RELEASE SAVEPOINT apply_event');
  return results;
}

const isFailed = (result: BatchEventResult): result is { readonly error: unknown } =>
  typeof result === 'object' && result !== null;

/** The handler's set-based form over the events, or its per-event form on each in turn. */
async function callHandler(
  tx: pg.PoolClient,
  deps: EngineDeps,
  request: ApplyRequest,
  events: readonly InboxEvent[],
  routed: string[][],
  spans: readonly ReturnType<typeof startSpan>[],
): Promise<readonly BatchEventResult[]> {
  const { handler, endpoint } = request;
  const logger = deps.logger.child({ endpoint });
  const routes = deps.destinations?.get(endpoint);
  if (handler.applyBatch) {
    const route = collectingRouter(endpoint, routes, events, routed);
    const results = await handler.applyBatch({ tx, logger, route }, events);
    if (results.length !== events.length) {
      throw new HookgateError(
        'handler_batch_invalid',
        `applyBatch returned ${results.length} results for ${events.length} events`,
      );
    }
    return results;
  }
  const apply = handler.apply;
  if (!apply)
    throw new HookgateError('handler_invalid', `handler ${handler.name} has neither apply nor applyBatch`);
  const results: BatchEventResult[] = [];
  for (const [n, event] of events.entries()) {
    // Each event's own router: a per-event handler routes only the event it was given.
    const route = collectingRouter(endpoint, routes, [event], [routed[n]!]);
    const context = { tx, route, logger: logger.child({ event_id: event.eventId }) };
    // Inside its event's span, so the handler's own statements (pg instrumentation) nest under it.
    results.push(await withSpan(spans[n]!, () => apply.call(handler, context, event)));
  }
  return results;
}
