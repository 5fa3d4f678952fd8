import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEFAULT_DEDUPE_HORIZON_MS } from '../../services/core/config/dedupe-schema.ts';
import { insertDeliveries } from '../../services/core/destinations/deliveries.ts';
import { prune } from '../../services/core/retention/prune.ts';
import { createTestDatabase, type TestDatabase } from '../support/database.ts';

// Retention of destination deliveries: delivered rows past the window go (their attempts with
// them); dead, held and unsent rows stay whatever their age.

const DAY = 86_400_000;
let db: TestDatabase;

beforeAll(async () => {
  db = await createTestDatabase();
});

afterAll(async () => {
  await db?.drop();
});

describe('hookgate prune and destination deliveries', () => {
  it('deletes delivered rows older than the window, and nothing else', async () => {
    const names = ['delivered_old', 'delivered_new', 'dead_old', 'held_old', 'pending_old'];
    await insertDeliveries(
      db.pool,
      'pay',
      names.map((name) => ({
        destination: 'ledger',
        eventId: name,
        eventType: 't',
        webhookId: `msg_${name}`,
        entityKey: null,
        entityVersion: null,
      })),
    );
    await db.pool.query(
      `UPDATE hookgate.destination_deliveries
          SET status = split_part(event_id, '_', 1),
              settled_at = CASE WHEN event_id IN ('delivered_old', 'dead_old') THEN now() - interval '100 days'
                                WHEN event_id = 'delivered_new' THEN now() - interval '10 days' END`,
    );
    await db.pool.query(
      `INSERT INTO hookgate.destination_attempts (delivery_id, attempt, started_at, duration_ms, http_status)
       SELECT id, 1, now() - interval '100 days', 5, 200 FROM hookgate.destination_deliveries`,
    );
    const dry = await prune(db.pool, {
      actor: 'test',
      inboxOlderThanMs: 30 * DAY,
      dedupe: { now: new Date(), horizonMs: DEFAULT_DEDUPE_HORIZON_MS },
      deliveriesOlderThanMs: 90 * DAY,
      chunk: 2,
      dryRun: true,
    });
    expect(dry.destinationDeliveries).toBe(1);
    const report = await prune(db.pool, {
      actor: 'test',
      inboxOlderThanMs: 30 * DAY,
      dedupe: { now: new Date(), horizonMs: DEFAULT_DEDUPE_HORIZON_MS },
      deliveriesOlderThanMs: 90 * DAY,
      chunk: 2,
    });
    expect(report).toEqual({
      inboxPartitions: 0,
      inboxPartitionsLeft: [],
      inboxRows: 0,
      inboxRowsInPartitions: 0,
      inboxKeys: 0,
      destinationDeliveries: 1,
      attempts: 0,
      audit: 0,
      quarantine: 0,
    });
    const { rows } = await db.pool.query<{ event_id: string }>(
      'SELECT event_id FROM hookgate.destination_deliveries ORDER BY event_id',
    );
    expect(rows.map((row) => row.event_id)).toEqual(['dead_old', 'delivered_new', 'held_old', 'pending_old']);
    const { rows: attempts } = await db.pool.query<{ n: number }>(
      'SELECT count(*)::int AS n FROM hookgate.destination_attempts',
    );
    expect(attempts[0]!.n).toBe(4);
  });
});
