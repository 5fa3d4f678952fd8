import type pg from 'pg';
import { PgBoss } from 'pg-boss';
import type { EventResult } from '../../services/core/apply/engine.ts';
import type { Handler, InboxEvent } from '../../services/core/handlers/types.ts';
import { type Claim, claimBatch } from '../../services/core/inbox/claim.ts';
import { createLogger } from '../../services/core/logging.ts';
import { applyQueue, eventIdsOf, PGBOSS_SCHEMA } from '../../services/core/queue/names.ts';
import { ensureQueues } from '../../services/core/queue/queues.ts';
import { applyJobs, type FetchedJob, type JobPolicy } from '../../services/worker/apply.ts';

// Handler tests go through the real path: the event is claimed as the gateway claims it (inbox
// row, apply job), the job is fetched as a worker fetches it, and the worker's apply (the apply
// engine, in one transaction with the job's completion) runs it. Nothing here stands in for a
// part of hookgate.

export const silentLogger = createLogger('silent');

export async function startBoss(url: string): Promise<PgBoss> {
  const boss = new PgBoss({
    connectionString: url,
    schema: PGBOSS_SCHEMA,
    migrate: false,
    supervise: false,
    schedule: false,
    max: 4,
  });
  boss.on('error', () => {});
  await boss.start();
  return boss;
}

/** One attempt per event, no backoff: a failed attempt ends the event (the error is thrown). */
export const ONE_ATTEMPT: JobPolicy = { maxAttempts: 1, retryDelaySeconds: 0, retryDelayMaxSeconds: 0 };

const queues = new WeakMap<PgBoss, Set<string>>();

async function queueFor(boss: PgBoss, endpoint: string): Promise<void> {
  const known = queues.get(boss) ?? new Set<string>();
  queues.set(boss, known);
  if (known.has(endpoint)) return;
  await ensureQueues(boss, [endpoint]);
  known.add(endpoint);
}

/** The claim the gateway would make of this event (its payload as the verified body). */
export function claimOf(event: InboxEvent, dedupe: 'enforce' | 'observe' = 'observe'): Claim {
  return {
    endpoint: event.endpoint,
    provider: event.provider,
    event: {
      eventId: event.eventId,
      eventType: event.eventType,
      entityType: event.entityType,
      entityId: event.entityId,
      entityVersion: event.entityVersion,
      headers: { ...event.headers },
    },
    body: JSON.stringify(event.payload),
    traceparent: event.traceparent,
    dedupe,
  };
}

/** Claims these events (one batch); `observe`, so claiming a settled event again dispatches it again. */
export async function claimEvents(pool: pg.Pool, boss: PgBoss, events: readonly InboxEvent[]): Promise<void> {
  for (const endpoint of new Set(events.map((event) => event.endpoint))) await queueFor(boss, endpoint);
  const results = await claimBatch(
    pool,
    boss,
    events.map((event) => claimOf(event)),
  );
  const failed = results.find((result) => !result.ok);
  if (failed && !failed.ok) throw failed.error;
}

/** Every job waiting in the endpoint's queue, as a worker's fetch hands them over. */
export async function fetchWaiting(boss: PgBoss, endpoint: string): Promise<FetchedJob[]> {
  const fetched = await boss.fetch(applyQueue(endpoint), { batchSize: 1_000, includeMetadata: true });
  return fetched.map((job) => ({ id: job.id, retryCount: job.retryCount, eventIds: eventIdsOf(job.data) }));
}

/**
 * Fetches every job waiting in the endpoint's queue and applies them as the worker does, in one
 * transaction. Returns each event's result.
 */
export async function applyWaiting(
  pool: pg.Pool,
  boss: PgBoss,
  endpoint: string,
  handler: Handler,
  policy: JobPolicy = ONE_ATTEMPT,
): Promise<EventResult[]> {
  const jobs = await fetchWaiting(boss, endpoint);
  if (jobs.length === 0) return [];
  return applyJobs({ pool, boss, logger: silentLogger }, endpoint, handler, jobs, policy);
}

/** A failed attempt, as the handler test sees it: its `code: message`. */
export class ApplyFailed extends Error {
  readonly result: EventResult;
  /** The failure's code (`billing_payload_invalid`, `sqlstate_P0001`, …). */
  readonly code: string;

  constructor(result: EventResult) {
    super(result.error ?? `${result.eventId} ended ${result.outcome}`);
    this.name = 'ApplyFailed';
    this.result = result;
    this.code = result.failureCode ?? '';
  }
}

/**
 * Claims one event and applies it through the worker's path (alone in its job). Returns how it
 * settled; throws ApplyFailed (message `code: message`) when the attempt failed. Claiming an
 * event that is already settled dispatches it again (`dedupe: observe`): the handler runs on it
 * once more, as it does for a provider's duplicate on an observe endpoint.
 */
export async function applyEvent(
  pool: pg.Pool,
  boss: PgBoss,
  handler: Handler,
  event: InboxEvent,
): Promise<string> {
  await claimEvents(pool, boss, [event]);
  const results = await applyWaiting(pool, boss, event.endpoint, handler);
  const result = results.find((candidate) => candidate.eventId === event.eventId);
  if (!result) throw new Error(`no job carried ${event.eventId}`);
  if (['retry', 'dead', 'parked'].includes(result.outcome)) throw new ApplyFailed(result);
  return result.outcome;
}

let sequence = 0;

/** An inbox event as the worker reads it back, for a Stripe-shaped body `{ id, type, data: { object } }`. */
export function stripeEvent(
  type: string,
  object: Record<string, unknown> & { id: string },
  options: { endpoint?: string; eventId?: string } = {},
): InboxEvent {
  sequence += 1;
  const eventId = options.eventId ?? `evt_${Date.now().toString(36)}_${sequence}`;
  return {
    endpoint: options.endpoint ?? 'stripe',
    eventId,
    provider: 'stripe',
    eventType: type,
    entityType: typeof object.object === 'string' ? object.object : null,
    entityId: object.id,
    entityVersion: null,
    payload: {
      id: eventId,
      object: 'event',
      type,
      created: Math.floor(Date.now() / 1000),
      data: { object },
    },
    headers: {},
    receivedAt: new Date(),
    attempts: 1,
    traceparent: null,
  };
}

/**
 * How many apply jobs name each of these events (any state). A claimed event is named by exactly
 * one: the job of its claim batch.
 */
export async function jobsNaming(pool: pg.Pool, eventIds: readonly string[]): Promise<number> {
  const { rows } = await pool.query<{ n: number }>(
    `SELECT count(*)::int AS n
       FROM pgboss.job j CROSS JOIN LATERAL jsonb_array_elements_text(j.data->'eventIds') AS e(event_id)
      WHERE j.name LIKE 'hookgate.apply.%' AND e.event_id = ANY ($1::text[])`,
    [eventIds],
  );
  return rows[0]!.n;
}
