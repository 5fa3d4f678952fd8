import type pg from 'pg';
import { PgBoss } from 'pg-boss';
import { createOutbox } from '../../services/core/apply/outbox.ts';
import type { Handler, InboxEvent } from '../../services/core/handlers/types.ts';
import { createLogger } from '../../services/core/logging.ts';
import { PGBOSS_SCHEMA } from '../../services/core/queue/names.ts';

/**
 * The apply step of the worker, reduced to what handler tests need: one real transaction on a
 * pooled connection, the handler inside a savepoint, the real transactional outbox (pg-boss
 * jobs sent with the same connection), COMMIT. A throw rolls the savepoint back, commits
 * nothing of the handler's, and is rethrown.
 */
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

export async function applyInTransaction(
  pool: pg.Pool,
  boss: PgBoss,
  handler: Handler,
  event: InboxEvent,
  hooks: { afterBegin?: (client: pg.PoolClient) => Promise<void> } = {},
): Promise<string> {
  const client = await pool.connect();
  let broken = false;
  try {
    await client.query('BEGIN');
    if (hooks.afterBegin) await hooks.afterBegin(client);
    await client.query('SAVEPOINT apply_event');
    const db = {
      executeSql: async (text: string, values?: unknown[]) => ({
        rows: (await client.query(text, values)).rows,
      }),
    };
    try {
      const outcome = await handler.apply(
        { tx: client, outbox: createOutbox(boss, db, event), logger: silentLogger },
        event,
      );
      await client.query('RELEASE SAVEPOINT apply_event');
      await client.query('COMMIT');
      return outcome ?? 'processed';
    } catch (error) {
      await client.query('ROLLBACK TO SAVEPOINT apply_event');
      await client.query('COMMIT');
      throw error;
    }
  } catch (error) {
    broken = true;
    await client.query('ROLLBACK').catch(() => {});
    throw error;
  } finally {
    client.release(broken);
  }
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
