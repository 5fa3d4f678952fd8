import type { Db as IDatabase, PgBoss } from 'pg-boss';
import { HookgateError } from '../errors.ts';
import type { InboxEvent, Outbox, OutboxMessage } from '../handlers/types.ts';
import { type OutboxEnvelope, outboxEnvelope } from '../outbox/message.ts';
import { outboxJobIdFor, outboxQueue } from '../queue/names.ts';
import { OUTBOX_KINDS } from '../queue/queues.ts';
import { activeTraceparent } from '../tracing.ts';

const KINDS: ReadonlySet<string> = new Set(OUTBOX_KINDS);

/** An outbox job ready to insert: queue, deterministic id, data. */
export interface OutboxJob {
  readonly kind: string;
  readonly id: string;
  readonly data: OutboxEnvelope;
}

function toJob(
  message: OutboxMessage,
  event: Pick<InboxEvent, 'endpoint' | 'eventId'>,
  traceparent: string | null = activeTraceparent(),
): OutboxJob {
  // Refused here, while the handler runs in its event's savepoint, so only that event fails: a
  // kind with no queue would otherwise fail the batch's one insert and every neighbour with it.
  if (!KINDS.has(message.kind)) {
    throw new HookgateError(
      'outbox_kind_unknown',
      `outbox kind "${message.kind}" has no relay; the kinds are ${OUTBOX_KINDS.join(', ')}`,
    );
  }
  if (message.key.length === 0) throw new HookgateError('outbox_key_invalid', 'outbox key must not be empty');
  const data = outboxEnvelope({
    kind: message.kind,
    key: message.key,
    endpoint: event.endpoint,
    eventId: event.eventId,
    payload: message.payload,
    traceparent,
  });
  return { kind: message.kind, id: outboxJobIdFor(message.kind, message.key), data };
}

/**
 * An Outbox that only collects: the worker inserts a whole batch's effects with one statement
 * per kind before its COMMIT (`insertOutboxJobs`), and drops an event's effects if that event's
 * apply is rolled back. Same ids, same transaction, one round trip instead of one per effect.
 */
export function collectingOutbox(
  event: Pick<InboxEvent, 'endpoint' | 'eventId'>,
  into: OutboxJob[],
  /** The event's apply span, when several events share one async context (a set-based batch). */
  traceparent?: string | null,
): Outbox {
  return {
    async enqueue(message: OutboxMessage): Promise<void> {
      into.push(toJob(message, event, traceparent === undefined ? activeTraceparent() : traceparent));
    },
  };
}

export async function insertOutboxJobs(
  boss: PgBoss,
  db: IDatabase,
  jobs: readonly OutboxJob[],
): Promise<void> {
  const byKind = new Map<string, Map<string, OutboxJob>>();
  for (const job of jobs) {
    // One effect queued twice in a batch is one job (pg-boss refuses duplicate ids in an insert).
    const ofKind = byKind.get(job.kind) ?? new Map<string, OutboxJob>();
    if (!ofKind.has(job.id)) ofKind.set(job.id, job);
    byKind.set(job.kind, ofKind);
  }
  for (const [kind, ofKind] of byKind) {
    await boss.insert(
      outboxQueue(kind),
      [...ofKind.values()].map((job) => ({ id: job.id, data: job.data })),
      { db },
    );
  }
}
