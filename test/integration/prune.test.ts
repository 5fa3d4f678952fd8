import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { prune } from '../../services/core/inbox/prune.ts';
import { createTestDatabase, type TestDatabase } from '../support/database.ts';

let db: TestDatabase;

beforeAll(async () => {
  db = await createTestDatabase();
});

afterAll(async () => {
  await db?.drop();
});

const DAY = 86_400_000;

async function row(eventId: string, status: string, ageDays: number): Promise<void> {
  await db.pool.query(
    `INSERT INTO hookgate.inbox (endpoint, event_id, provider, event_type, payload, status, received_at)
     VALUES ('ep', $1, 'stripe', 't', '{}', $2, now() - make_interval(days => $3))`,
    [eventId, status, ageDays],
  );
}

describe('prune', () => {
  it('deletes only settled rows older than the window, in chunks, and never unsettled ones', async () => {
    for (const status of ['processed', 'ignored', 'stale', 'pending', 'parked', 'dead']) {
      await row(`old_${status}`, status, 40);
      await row(`new_${status}`, status, 1);
    }
    for (let i = 0; i < 5; i += 1) await row(`old_extra_${i}`, 'processed', 50);
    await db.pool.query(
      `INSERT INTO hookgate.outbox_deliveries (kind, key, status, settled_at)
       VALUES ('notify', 'old', 'delivered', now() - interval '100 days'),
              ('notify', 'recent', 'delivered', now() - interval '10 days'),
              ('notify', 'stuck', 'dead', now() - interval '100 days')`,
    );
    const report = await prune(db.pool, {
      inboxOlderThanMs: 30 * DAY,
      deliveriesOlderThanMs: 90 * DAY,
      chunk: 2,
    });
    expect(report).toEqual({ inboxRows: 8, deliveries: 1 });
    const left = await db.pool.query('SELECT event_id FROM hookgate.inbox ORDER BY event_id');
    expect(left.rows.map((r) => r.event_id)).toEqual([
      'new_dead',
      'new_ignored',
      'new_parked',
      'new_pending',
      'new_processed',
      'new_stale',
      'old_dead',
      'old_parked',
      'old_pending',
    ]);
    const deliveries = await db.pool.query('SELECT key FROM hookgate.outbox_deliveries ORDER BY key');
    expect(deliveries.rows.map((r) => r.key)).toEqual(['recent', 'stuck']);
  });
});
