// The apply baseline: the worker a user would write by hand around a plain queue table.
// BASELINE_CONCURRENCY loops, each on its own connection, one transaction per event:
//   BEGIN; SELECT … FOR UPDATE SKIP LOCKED LIMIT 1; billing apply(); UPDATE … done; COMMIT
// It runs the same billing handler as hookgate (imported, not copied), drains the backlog it
// finds and exits, printing one JSON line with its counts.
import type pg from 'pg';
import { z } from 'zod';
import { createPool } from '../services/core/db/pool.ts';
import { createBillingHandler } from '../services/core/handlers/billing.ts';
import type { InboxEvent } from '../services/core/handlers/types.ts';
import { createLogger } from '../services/core/logging.ts';

const env = z
  .object({
    DATABASE_URL: z.string().min(1),
    BASELINE_CONCURRENCY: z.coerce.number().int().min(1).max(64).default(2),
    BASELINE_ENDPOINT: z.string().default('billing'),
    LOG_LEVEL: z.string().default('warn'),
  })
  .parse(process.env);

/** Next unfinished event; a partial index on (id) WHERE NOT done keeps this the size of the backlog. */
const TAKE_ONE = `
  SELECT id, endpoint, event_id, event_type, payload, received_at
    FROM bench_baseline.queue
   WHERE NOT done
   ORDER BY id
   FOR UPDATE SKIP LOCKED
   LIMIT 1`;
const MARK_DONE = 'UPDATE bench_baseline.queue SET done = true, done_at = clock_timestamp() WHERE id = $1';
const MARK_FAILED = `UPDATE bench_baseline.queue SET done = true, done_at = clock_timestamp(), error = $2 WHERE id = $1`;

interface QueueRow {
  readonly id: string;
  readonly endpoint: string;
  readonly event_id: string;
  readonly event_type: string;
  readonly payload: { data?: { object?: { id?: unknown; object?: unknown } } };
  readonly received_at: Date;
}

const logger = createLogger(env.LOG_LEVEL);
const handler = createBillingHandler(
  {},
  { endpoint: env.BASELINE_ENDPOINT, logger, configDir: process.cwd() },
);
const pool: pg.Pool = createPool({
  connectionString: env.DATABASE_URL,
  max: env.BASELINE_CONCURRENCY,
  statementTimeoutMs: 30_000,
  connectTimeoutMs: 10_000,
  applicationName: 'bench-baseline-worker',
});

const counts = { applied: 0, failed: 0 };

/** The billing handler here has no `notify` destination: it routes nothing. */
function route(): void {
  throw new Error('the baseline has no destinations to route to');
}

function eventOf(row: QueueRow): InboxEvent {
  const object = row.payload.data?.object;
  return {
    endpoint: row.endpoint,
    eventId: row.event_id,
    provider: 'stripe',
    eventType: row.event_type,
    entityType: typeof object?.object === 'string' ? object.object : null,
    entityId: typeof object?.id === 'string' ? object.id : null,
    entityVersion: null,
    payload: row.payload,
    headers: {},
    receivedAt: row.received_at,
    attempts: 1,
    traceparent: null,
  };
}

/** Drains until the queue has nothing left that another loop is not already holding. */
async function loop(): Promise<void> {
  const client = await pool.connect();
  try {
    for (;;) {
      await client.query('BEGIN');
      const taken = await client.query<QueueRow>(TAKE_ONE);
      const row = taken.rows[0];
      if (!row) {
        await client.query('COMMIT');
        return;
      }
      try {
        // The handler's own form, on one event: a batch of one (its `apply` where it has one).
        const event = eventOf(row);
        const [result] = handler.applyBatch
          ? await handler.applyBatch({ tx: client, route, logger }, [event])
          : [await handler.apply!({ tx: client, route, logger }, event)];
        if (typeof result === 'object' && result !== null) throw result.error;
        await client.query(MARK_DONE, [row.id]);
        await client.query('COMMIT');
        counts.applied += 1;
      } catch (error) {
        await client.query('ROLLBACK');
        await client.query(MARK_FAILED, [row.id, String(error)]);
        counts.failed += 1;
      }
    }
  } finally {
    client.release();
  }
}

process.stdout.write('baseline worker ready\n');
await Promise.all(Array.from({ length: env.BASELINE_CONCURRENCY }, () => loop()));
await pool.end();
process.stdout.write(`${JSON.stringify({ done: true, ...counts })}\n`);
