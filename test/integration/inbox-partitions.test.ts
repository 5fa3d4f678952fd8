// The partitioned inbox (the baseline migration, services/core/inbox/partitions.ts), on PostgreSQL
// 15 and 18: deduplication exact across partitions (the keys table decides, whoever inserts),
// retention by dropping a week's partition that keeps every unsettled row and its key, rows
// moved by an UPDATE of received_at kept, partitions made ahead.
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CLAIM_INBOX_ROWS } from '../../services/core/inbox/claim-sql.ts';
import {
  ensureInboxPartitions,
  INBOX_PARTITION_DAYS,
  INBOX_PARTITIONS_AHEAD_DAYS,
  listInboxPartitions,
} from '../../services/core/inbox/partitions.ts';
import { pruneInbox } from '../../services/core/inbox/prune.ts';
import { createTestDatabase, type TestDatabase } from '../support/database.ts';

let db: TestDatabase;
const DAY = 86_400_000;

beforeAll(async () => {
  db = await createTestDatabase();
});

afterAll(async () => {
  await db?.drop();
});

/** The partitions that start after now (not the one holding now), oldest first. */
async function ahead(): Promise<{ from_at: Date; to_at: Date }[]> {
  return (await listInboxPartitions(db.pool)).filter((p) => p.from_at.getTime() > Date.now());
}

/** Milliseconds from now to a minute into the `index`th partition ahead. */
async function into(index: number): Promise<number> {
  const partition = (await ahead())[index]!;
  return partition.from_at.getTime() + 60_000 - Date.now();
}

/** A prune window (negative: a cutoff ahead of now) that ends a minute after that partition. */
async function pastEndOf(index: number): Promise<number> {
  const partition = (await ahead())[index]!;
  return -(partition.to_at.getTime() + 60_000 - Date.now());
}

/** One row as the claim writes it (CLAIM_INBOX_ROWS, the transactional claim's statement). */
async function claim(
  endpoint: string,
  eventIds: readonly string[],
  client: Pick<pg.Pool | pg.Client, 'query'> = db.pool,
): Promise<string[]> {
  const n = eventIds.length;
  const fill = <T>(value: T): T[] => Array.from({ length: n }, () => value);
  const { rows } = await client.query<{ event_id: string }>(CLAIM_INBOX_ROWS, [
    fill(endpoint),
    eventIds,
    fill('standard-webhooks'),
    fill('t'),
    fill(null),
    fill(null),
    fill(null),
    eventIds.map((id) => JSON.stringify({ id })),
    fill('{}'),
    fill(null),
    fill(false),
    fill('gateway'),
    fill(null),
    fill(null),
  ]);
  return rows.map((r) => r.event_id);
}

/** A row received at a given time (now + offset), inserted as a claim would be. */
async function insertAt(
  endpoint: string,
  eventId: string,
  offsetMs: number,
  status = 'processed',
): Promise<boolean> {
  const { rowCount } = await db.pool.query(
    `INSERT INTO hookgate.inbox (endpoint, event_id, provider, event_type, payload, status, received_at)
     VALUES ($1, $2, 'standard-webhooks', 't', '{}', $3, now() + make_interval(secs => $4::float8 / 1000))
     ON CONFLICT DO NOTHING`,
    [endpoint, eventId, status, offsetMs],
  );
  return rowCount === 1;
}

/** Retention of payloads and of keys with one window: keys go with their rows' week here. */
function pruneUpTo(olderThan: number, batchSize: number) {
  return pruneInbox(db.pool, { olderThan, batchSize, dedupe: { now: new Date(), horizonMs: olderThan } });
}

async function rowsOf(endpoint: string, eventId: string): Promise<{ partition: string; status: string }[]> {
  return (
    await db.pool.query(
      `SELECT tableoid::regclass::text AS partition, status FROM hookgate.inbox WHERE endpoint = $1 AND event_id = $2`,
      [endpoint, eventId],
    )
  ).rows;
}

async function keyOf(endpoint: string, eventId: string): Promise<{ received_at: Date } | undefined> {
  return (
    await db.pool.query('SELECT received_at FROM hookgate.inbox_keys WHERE endpoint = $1 AND event_id = $2', [
      endpoint,
      eventId,
    ])
  ).rows[0];
}

describe('the partitioned inbox', () => {
  it('is what migrate leaves: week partitions from today, made ahead', async () => {
    const kind = await db.pool.query(
      `SELECT relkind::text FROM pg_class WHERE oid = 'hookgate.inbox'::regclass`,
    );
    expect(kind.rows[0].relkind).toBe('p');
    const partitions = await listInboxPartitions(db.pool);
    // The first holds now; the last reaches two weeks ahead; no gap between them.
    expect(partitions[0]!.from_at.getTime()).toBeLessThanOrEqual(Date.now());
    expect(partitions[0]!.to_at.getTime()).toBeGreaterThan(Date.now());
    const last = partitions.at(-1)!;
    expect(last.to_at.getTime()).toBeGreaterThanOrEqual(Date.now() + INBOX_PARTITIONS_AHEAD_DAYS * DAY);
    expect(partitions.length).toBeGreaterThanOrEqual(3);
    for (const [i, p] of partitions.entries()) {
      if (i > 0) expect(p.from_at.getTime()).toBe(partitions[i - 1]!.to_at.getTime());
      expect(p.to_at.getTime() - p.from_at.getTime()).toBe(INBOX_PARTITION_DAYS * DAY);
    }
    // Again: nothing missing, nothing made.
    expect(await ensureInboxPartitions(db.pool)).toBe(0);
  });

  it('a redelivery is a duplicate whichever partition holds the original', async () => {
    // The original in the first partition ahead, the redelivery claimed now (the partition
    // holding now): two partitions, one key.
    expect(await insertAt('dup', 'evt_ahead', await into(0))).toBe(true);
    expect((await rowsOf('dup', 'evt_ahead'))[0]!.partition).toMatch(/^hookgate\.inbox_p\d{8}$/);
    expect(await claim('dup', ['evt_ahead', 'evt_new'])).toEqual(['evt_new']);
    // Last month's event, redelivered today.
    expect(await insertAt('dup', 'evt_last_month', -31 * DAY)).toBe(true);
    expect(await claim('dup', ['evt_last_month'])).toEqual([]);
    // And the other way round: a key claimed now, the same id arriving in a later partition.
    expect(await insertAt('dup', 'evt_new', await into(1))).toBe(false);
    expect(await rowsOf('dup', 'evt_new')).toHaveLength(1);
    // Twice in one batch: one row.
    expect(await claim('dup', ['evt_twice', 'evt_twice'])).toEqual(['evt_twice']);
  });

  it('concurrent claims of one key into different partitions: exactly one row', async () => {
    const clients = await Promise.all(
      [0, 1].map(async () => {
        const c = new pg.Client({ connectionString: db.url });
        await c.connect();
        return c;
      }),
    );
    try {
      for (let round = 0; round < 20; round += 1) {
        const id = `race_${round}`;
        const [first, second] = clients as [pg.Client, pg.Client];
        await first.query('BEGIN');
        await second.query('BEGIN');
        const insert = (c: pg.Client, offsetMs: number) =>
          c.query(
            `INSERT INTO hookgate.inbox (endpoint, event_id, provider, event_type, payload, received_at)
             VALUES ('race', $1, 'standard-webhooks', 't', '{}', now() + make_interval(secs => $2::float8 / 1000))
             ON CONFLICT DO NOTHING RETURNING event_id`,
            [id, offsetMs],
          );
        const a = await insert(first, 0);
        // The second, into the next partition, waits on the first's key until it commits.
        const pendingB = insert(second, await into(0));
        let settled = false;
        void pendingB.finally(() => {
          settled = true;
        });
        await new Promise((resolve) => setTimeout(resolve, 50));
        expect(settled).toBe(false);
        await first.query(round % 2 === 0 ? 'COMMIT' : 'ROLLBACK');
        const b = await pendingB;
        await second.query('COMMIT');
        // Committed: the second is a duplicate. Rolled back: the second is the event.
        expect([a.rowCount, b.rowCount]).toEqual(round % 2 === 0 ? [1, 0] : [1, 1]);
        expect(await rowsOf('race', id)).toHaveLength(1);
      }
    } finally {
      await Promise.all(clients.map((c) => c.end()));
    }
  });

  it('a row whose received_at an UPDATE changes moves partitions with its key', async () => {
    expect(await insertAt('move', 'evt_move', 0, 'pending')).toBe(true);
    const offset = await into(0);
    await db.pool.query(
      `UPDATE hookgate.inbox SET received_at = now() + make_interval(secs => $1::float8 / 1000)
        WHERE endpoint = 'move' AND event_id = 'evt_move'`,
      [offset],
    );
    const rows = await rowsOf('move', 'evt_move');
    expect(rows).toHaveLength(1);
    expect(rows[0]!.partition).toMatch(/^hookgate\.inbox_p\d{8}$/);
    expect((await keyOf('move', 'evt_move'))!.received_at.getTime()).toBeGreaterThan(
      Date.now() + offset - 60_000,
    );
    expect(await claim('move', ['evt_move'])).toEqual([]);
    await expect(
      db.pool.query(
        `UPDATE hookgate.inbox SET event_id = 'other' WHERE endpoint = 'move' AND event_id = 'evt_move'`,
      ),
    ).rejects.toThrow(/never change/);
  });

  it('a row deleted keeps its key (until the dedupe horizon): the event is still a duplicate', async () => {
    expect(await claim('del', ['evt_del'])).toEqual(['evt_del']);
    await db.pool.query(`DELETE FROM hookgate.inbox WHERE endpoint = 'del'`);
    expect(await keyOf('del', 'evt_del')).toBeDefined();
    expect(await claim('del', ['evt_del'])).toEqual([]);
  });

  it('retention drops whole partitions, keeps every unsettled row and its key, then forgets the rest', async () => {
    // In the first partition ahead: a settled row and one of each kept status.
    const offset = await into(0);
    for (const status of ['processed', 'ignored', 'stale', 'pending', 'parked', 'dead', 'discarded']) {
      expect(await insertAt('ret', `evt_${status}`, offset, status)).toBe(true);
    }
    const partition = (await rowsOf('ret', 'evt_processed'))[0]!.partition.replace('hookgate.', '');
    // A window that ends after that partition (a negative age: the cutoff is ahead of now).
    const counts = await pruneUpTo(await pastEndOf(0), 100);
    const drop = counts.partitions.find((p) => p.name === partition);
    expect(drop).toMatchObject({ moved: expect.any(Number) });
    expect(drop!.moved).toBeGreaterThanOrEqual(4);
    // The settled rows that went with it are counted (as prune --dry-run counts them).
    expect(drop!.rows).toBeGreaterThanOrEqual(3);
    expect((await listInboxPartitions(db.pool)).map((p) => p.name)).not.toContain(partition);
    for (const status of ['processed', 'ignored', 'stale']) {
      expect(await rowsOf('ret', `evt_${status}`)).toEqual([]);
      expect(await keyOf('ret', `evt_${status}`)).toBeUndefined();
    }
    for (const status of ['pending', 'parked', 'dead', 'discarded']) {
      expect(await rowsOf('ret', `evt_${status}`)).toEqual([{ partition: 'hookgate.inbox_default', status }]);
      expect(await keyOf('ret', `evt_${status}`)).toBeDefined();
      // Still deduplicated after the move.
      expect(await claim('ret', [`evt_${status}`])).toEqual([]);
    }
    // A settled event past retention is forgotten: its redelivery is a new event.
    expect(await keyOf('ret', 'evt_processed')).toBeUndefined();
    expect(await claim('ret', ['evt_processed'])).toEqual(['evt_processed']);
    // Partitions ahead were made again by the same prune.
    const last = (await listInboxPartitions(db.pool)).at(-1)!;
    expect(last.to_at.getTime()).toBeGreaterThan(Date.now() + (INBOX_PARTITIONS_AHEAD_DAYS - 1) * DAY);
  });

  it('a partition with more unsettled rows than a drop may move is left, and said so', async () => {
    const ahead = await into(0);
    await db.pool.query(
      `INSERT INTO hookgate.inbox (endpoint, event_id, provider, event_type, payload, status, received_at)
       SELECT 'held', 'evt_' || g, 'standard-webhooks', 't', '{}', 'dead', now() + make_interval(secs => $1::float8 / 1000)
         FROM generate_series(1, 10001) g`,
      [ahead],
    );
    const partition = (await rowsOf('held', 'evt_1'))[0]!.partition.replace('hookgate.', '');
    const counts = await pruneUpTo(await pastEndOf(0), 1000);
    expect(counts.partitions.find((p) => p.name === partition)).toEqual({
      name: partition,
      moved: null,
      rows: 0,
      left: 'unsettled_rows',
      kept: 10_001,
    });
    expect((await listInboxPartitions(db.pool)).map((p) => p.name)).toContain(partition);
    expect(
      (await db.pool.query(`SELECT count(*)::int AS n FROM hookgate.inbox WHERE endpoint = 'held'`)).rows[0]
        .n,
    ).toBe(10_001);

    // A later week past the window is dropped beside it, and its keys go: the partition left
    // keeps only its own week's keys.
    await ensureInboxPartitions(db.pool, 30);
    const later = await into(1);
    expect(await insertAt('held', 'evt_later', later, 'processed')).toBe(true);
    const laterPartition = (await rowsOf('held', 'evt_later'))[0]!.partition.replace('hookgate.', '');
    const again = await pruneUpTo(await pastEndOf(1), 1000);
    expect(again.partitions.find((p) => p.name === partition)).toMatchObject({ left: 'unsettled_rows' });
    expect(again.partitions.find((p) => p.name === laterPartition)).toMatchObject({ moved: 0 });
    expect(await keyOf('held', 'evt_later')).toBeUndefined();
    expect(await keyOf('held', 'evt_1')).toBeDefined();
    expect(again.keys).toBeGreaterThanOrEqual(1);
  });
});
