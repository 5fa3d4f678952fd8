import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Config } from '../../services/core/config/schema.ts';
import { pauseDestination, resumeDestination } from '../../services/core/destinations/actions.ts';
import { insertDeliveries } from '../../services/core/destinations/deliveries.ts';
import { beginWithPauseFence } from '../../services/core/pause/pause.ts';
import { createTestDatabase, type TestDatabase } from '../support/database.ts';
import { waitFor, workerConfig } from '../support/worker-harness.ts';

// Pausing a destination while an apply of its endpoint is in flight: the apply's deliveries were
// written before the pause could see them (uncommitted), and its own statement had read the
// destination as running. Without a fence between the two, such a delivery stayed `pending` in a
// paused destination — not sent (the claim skips paused destinations) but not counted as held
// either, and a resume-less operator saw "0 held". The pause waits for applies in flight, as an
// endpoint's pause does, so what they wrote is held with the rest.

let db: TestDatabase;
let config: Config;

beforeAll(async () => {
  db = await createTestDatabase();
  config = workerConfig({
    pay: { handler: 'record', destinations: { ledger: { url: 'http://127.0.0.1:9/ledger' } } },
  });
});

afterAll(async () => {
  await db?.drop();
});

async function statusOf(eventId: string): Promise<string | undefined> {
  const { rows } = await db.pool.query<{ status: string }>(
    `SELECT status FROM hookgate.destination_deliveries WHERE endpoint = 'pay' AND event_id = $1`,
    [eventId],
  );
  return rows[0]?.status;
}

/** Sessions of this database waiting for an advisory lock. */
async function waitingOnFence(): Promise<number> {
  const { rows } = await db.pool.query<{ n: number }>(
    `SELECT count(*)::int AS n FROM pg_stat_activity
      WHERE datname = current_database() AND wait_event_type = 'Lock' AND wait_event = 'advisory'`,
  );
  return rows[0]!.n;
}

describe('destination pause and applies in flight', () => {
  it('a delivery an apply wrote before the pause, committed after it, is held', async () => {
    const apply = await db.pool.connect();
    try {
      await apply.query(beginWithPauseFence('pay'));
      await insertDeliveries(apply, 'pay', [
        {
          destination: 'ledger',
          eventId: 'evt_inflight',
          eventType: 'thing.updated',
          webhookId: 'msg_inflight',
          entityKey: null,
          entityVersion: null,
        },
      ]);
      let finished = false;
      const pausing = pauseDestination(db.pool, config, { destination: 'ledger', actor: 'test' }).then(
        (summary) => {
          finished = true;
          return summary;
        },
      );
      // Either the pause waits for the apply (the fence), or it ended without it: a state, either way.
      await waitFor(
        'the pause to wait for the apply or to end',
        async () => finished || (await waitingOnFence()) > 0,
      );
      expect(finished, 'the pause ended while an apply of its endpoint was in flight').toBe(false);
      await apply.query('COMMIT');
      const summary = await pausing;
      expect(summary.count).toBe(1);
    } finally {
      apply.release();
    }
    expect(await statusOf('evt_inflight')).toBe('held');

    const resumed = await resumeDestination(db.pool, config, { destination: 'ledger', actor: 'test' });
    expect(resumed.count).toBe(1);
    expect(await statusOf('evt_inflight')).toBe('pending');
  });

  it('an apply that begins while the destination is paused writes its deliveries held', async () => {
    await pauseDestination(db.pool, config, { destination: 'ledger', actor: 'test' });
    const apply = await db.pool.connect();
    try {
      await apply.query(beginWithPauseFence('pay'));
      await insertDeliveries(apply, 'pay', [
        {
          destination: 'ledger',
          eventId: 'evt_after',
          eventType: 'thing.updated',
          webhookId: 'msg_after',
          entityKey: null,
          entityVersion: null,
        },
      ]);
      await apply.query('COMMIT');
    } finally {
      apply.release();
    }
    expect(await statusOf('evt_after')).toBe('held');
    await resumeDestination(db.pool, config, { destination: 'ledger', actor: 'test' });
  });
});
