import type pg from 'pg';
import type { PgBoss } from 'pg-boss';
import { executorFor } from '../db/executor.ts';
import type { ApplyContext, ApplyOutcome, Handler, InboxEvent } from '../handlers/types.ts';
import type { InboxRow } from '../inbox/rows.ts';
import type { Logger } from '../logging.ts';
import { collectingOutbox, createOutbox, type OutboxJob } from './outbox.ts';

// Running one handler on one inbox row: shared by the worker's batches and by sync-mode
// endpoints, which apply inside the gateway's claim transaction.

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

/**
 * Runs one handler. With `collect`, its outbox effects are gathered there for the caller to
 * insert together; without, each is inserted at once in the transaction.
 */
export async function runHandler(
  client: pg.ClientBase,
  boss: PgBoss,
  handler: Handler,
  logger: Logger,
  event: InboxEvent,
  collect?: OutboxJob[],
): Promise<ApplyOutcome> {
  const context: ApplyContext = {
    tx: client,
    outbox: collect ? collectingOutbox(event, collect) : createOutbox(boss, executorFor(client), event),
    logger: logger.child({ endpoint: event.endpoint, event_id: event.eventId }),
  };
  return (await handler.apply(context, event)) ?? 'processed';
}
