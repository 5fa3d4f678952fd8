import type pg from 'pg';
import { HookgateError } from '../errors.ts';
import type { Logger } from '../logging.ts';

/** A claimed event as the worker reads it back from the inbox. */
export interface InboxEvent {
  readonly endpoint: string;
  readonly eventId: string;
  readonly provider: string;
  readonly eventType: string;
  readonly entityType: string | null;
  readonly entityId: string | null;
  /** Decimal integer string (integers as given, timestamps as epoch microseconds), or null. */
  readonly entityVersion: string | null;
  readonly payload: unknown;
  readonly headers: Readonly<Record<string, string>>;
  readonly receivedAt: Date;
  /** Attempts already counted, including the one now running. */
  readonly attempts: number;
  readonly traceparent: string | null;
}

/** How an applied event settles its inbox row. */
export type ApplyOutcome = 'processed' | 'ignored' | 'stale';

/**
 * Sends an event to one of its endpoint's destinations that set `routedBy: handler`
 * (docs/destinations.md): a delivery row naming the endpoint, that destination and the event,
 * written with the apply, so it exists only if that event's apply commits, and sent as the
 * destination sends any event. Throws for a name the endpoint has no such destination by (the
 * event then fails, dead at once), or for an event not being applied here.
 */
export type RouteEvent = (event: InboxEvent, destination: string) => void;

export interface ApplyContext {
  /** The batch transaction, inside this event's savepoint. Never COMMIT or ROLLBACK it. */
  readonly tx: pg.ClientBase;
  /** Routes the event being applied (the only one it takes) to a destination; see RouteEvent. */
  readonly route: RouteEvent;
  readonly logger: Logger;
}

export interface BatchContext {
  /** The batch transaction, inside the batch's savepoint. Never COMMIT or ROLLBACK it. */
  readonly tx: pg.ClientBase;
  /** Routes one event of the batch to a destination; kept only if that event applies. */
  readonly route: RouteEvent;
  readonly logger: Logger;
}

/**
 * One event's result in a batch: how it settles, or the error it fails with. An error may be
 * returned only for an event the batch wrote nothing for (e.g. its payload failed validation
 * before any statement ran); anything else must throw, which rolls the batch back and reruns
 * it event by event.
 */
export type BatchEventResult = ApplyOutcome | undefined | { readonly error: unknown };

/**
 * A handler has one of two forms, and the apply engine (apply/engine.ts) runs either: the built-in
 * handlers are set-based (`applyBatch`; one event alone is a batch of one), while `module:`,
 * and `sql:` handlers apply one event at a time (`apply`).
 */
export interface Handler {
  readonly name: string;
  /**
   * The per-event form: returns how the event settles (nothing means `processed`). Throwing
   * fails the attempt; the engine rolls back that event's writes and retries it later.
   */
  apply?(context: ApplyContext, event: InboxEvent): Promise<ApplyOutcome | undefined>;
  /**
   * The set-based form: applies a whole batch with a few statements and returns one result per
   * event, in the order given. It must leave exactly what applying the events one at a time in
   * that order would leave (same rows, same outcomes, same routes); the engine's
   * differential test holds the built-in handlers to it. Throwing rolls the batch back and the
   * engine applies the events again one at a time, each a batch of one in its own savepoint.
   */
  applyBatch?(context: BatchContext, events: readonly InboxEvent[]): Promise<readonly BatchEventResult[]>;
  /**
   * Optional: takes the locks the batch's writes need, in an order every batch shares, before
   * any of them. The engine calls it before the batch's savepoint, so the locks are still held
   * when a failed set-based pass is rolled back to that savepoint and the batch is applied
   * again event by event (a rollback to a savepoint releases the locks taken after it).
   * A handler that has it relies on it: `applyBatch` takes no locks of its own, so whoever
   * calls `applyBatch` calls `lockBatch` first, in the same transaction, with the same events.
   */
  lockBatch?(tx: pg.ClientBase, events: readonly InboxEvent[]): Promise<void>;
}

/** Splits a batch into rounds: the n-th round holds the n-th event of every key, in order. */
export function roundsByKey<T>(items: readonly T[], keyOf: (item: T) => string): T[][] {
  const seen = new Map<string, number>();
  const rounds: T[][] = [];
  for (const item of items) {
    const key = keyOf(item);
    const n = seen.get(key) ?? 0;
    seen.set(key, n + 1);
    const round = rounds[n] ?? [];
    round.push(item);
    rounds[n] = round;
  }
  return rounds;
}

/**
 * The event itself can never be applied as it is (its payload lacks what the handler needs, the
 * projection cannot key it): retrying cannot help, so it ends `dead` at its first attempt instead
 * of spending every retry, visible and requeueable once the cause is fixed. Transient failures
 * (anything else) keep retrying.
 */
export class EventUnusable extends HookgateError {}

/**
 * The event is valid but refers to something not known yet (e.g. a payment for an invoice
 * whose creation has not arrived). Retried like any failure; past the limit it is `parked`,
 * not `dead`, because requeueing it once the parent exists will succeed.
 */
export class EntityNotYetKnown extends HookgateError {
  constructor(message: string) {
    super('entity_not_yet_known', message);
    this.name = 'EntityNotYetKnown';
  }
}
