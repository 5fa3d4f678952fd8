import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type EventRow, type EventSearch, searchEvents } from '../../services/console/read-models/events.ts';
import { createTestDatabase, type TestDatabase } from '../support/database.ts';

// The events page's keyset pages, against a real inbox: paging to the end visits every matching
// row exactly once and in order, whatever index answers, through runs of rows received in the
// same claim (equal received_at), and across pages that stop because their rows to read ran out.
let db: TestDatabase;
const ENDPOINTS = ['alpha', 'beta', 'gamma'];
// The endpoints with `payloadSearch`: their rows are marked for the payload index, gamma's are not.
const SEARCHABLE = ['alpha', 'beta'];
const ROWS = 3_000;

beforeAll(async () => {
  db = await createTestDatabase();
  // 100 rows per received_at (as one claim batch stores them), statuses, types and customers mixed.
  await db.pool.query(
    `INSERT INTO hookgate.inbox (endpoint, event_id, provider, event_type, entity_type, entity_id, payload, status, attempts,
                                 received_at, payload_search)
     SELECT (ARRAY['alpha','beta','gamma'])[1 + n % 3], 'evt_' || n, 'standard-webhooks',
            CASE WHEN n % 50 = 0 THEN 'rare.type' ELSE 'common.type' END, 'invoice', 'in_' || (n % 40),
            jsonb_build_object('data', jsonb_build_object('customer', 'cus_' || (n % 25))),
            CASE WHEN n % 10 = 0 THEN 'dead' WHEN n % 10 = 1 THEN 'pending' ELSE 'processed' END, 1,
            timestamptz '2026-11-01 00:00:00Z' + (n / 100) * interval '1 second',
            CASE WHEN n % 3 <> 2 THEN true END
       FROM generate_series(1, $1::int) AS n`,
    [ROWS],
  );
  await db.pool.query('ANALYZE hookgate.inbox');
});

afterAll(async () => {
  await db?.drop();
});

async function everyPage(search: EventSearch, limits: { pageSize: number; scanRows: number }) {
  const seen: EventRow[] = [];
  let after = search.after;
  let pages = 0;
  let readBack = 0;
  const paths = new Set<string>();
  for (;;) {
    const page = await searchEvents(db.pool, { ...search, after }, ENDPOINTS, limits, SEARCHABLE);
    seen.push(...page.rows);
    paths.add(page.path);
    pages += 1;
    if (page.readBackTo) readBack += 1;
    if (!page.next) break;
    after = page.next;
    expect(pages).toBeLessThan(10_000);
  }
  return { seen, pages, readBack, paths };
}

async function expected(where: string, params: unknown[] = []): Promise<string[]> {
  const { rows } = await db.pool.query<{ id: string }>(
    `SELECT endpoint || '/' || event_id AS id FROM hookgate.inbox WHERE ${where}
      ORDER BY received_at DESC, endpoint DESC, event_id DESC`,
    params,
  );
  return rows.map((row) => row.id);
}

const ids = (rows: readonly EventRow[]) => rows.map((row) => `${row.endpoint}/${row.event_id}`);

describe('console event pages', () => {
  const cases: Array<[string, EventSearch, string]> = [
    ['everything, by time', {}, 'true'],
    ['one endpoint, by time', { endpoint: 'beta' }, `endpoint = 'beta'`],
    [
      'a rare type, by time (pages stop at the rows to read)',
      { type: 'rare.type' },
      `event_type = 'rare.type'`,
    ],
    ['dead, per endpoint partial index', { status: 'dead' }, `status = 'dead'`],
    [
      'pending of one endpoint',
      { endpoint: 'gamma', status: 'pending' },
      `status = 'pending' AND endpoint = 'gamma'`,
    ],
    ['an entity', { entityId: 'in_7' }, `entity_id = 'in_7'`],
    [
      'a payload containment and a status',
      { contains: { data: { customer: 'cus_3' } }, status: 'processed' },
      `payload @> '{"data":{"customer":"cus_3"}}' AND status = 'processed'`,
    ],
    [
      'a payload containment on an endpoint with payloadSearch',
      { contains: { data: { customer: 'cus_4' } }, endpoint: 'alpha' },
      `payload @> '{"data":{"customer":"cus_4"}}' AND endpoint = 'alpha'`,
    ],
    [
      'a payload containment on an endpoint without it',
      { contains: { data: { customer: 'cus_4' } }, endpoint: 'gamma' },
      `payload @> '{"data":{"customer":"cus_4"}}' AND endpoint = 'gamma'`,
    ],
    [
      'a time range',
      { since: new Date('2026-11-01T00:00:05Z'), until: new Date('2026-11-01T00:00:12Z') },
      `received_at >= '2026-11-01T00:00:05Z' AND received_at < '2026-11-01T00:00:12Z'`,
    ],
  ];
  it.each(cases)('%s: every match once, newest first', async (_name, search, where) => {
    const want = await expected(where);
    expect(want.length).toBeGreaterThan(0);
    const { seen } = await everyPage(search, { pageSize: 7, scanRows: 1_000 });
    expect(ids(seen)).toEqual(want);
  });

  it('a filter the index cannot answer reads back in steps of the rows to read, never more', async () => {
    const { seen, pages, readBack } = await everyPage(
      { type: 'rare.type' },
      { pageSize: 50, scanRows: 1_000 },
    );
    expect(seen.length).toBe(ROWS / 50);
    // 3 000 rows read 1 000 at a time: each page stops at its rows to read (the third cannot know
    // it read the last row), and a fourth, empty one ends it.
    expect(readBack).toBe(3);
    expect(pages).toBe(4);
  });

  it('searches payloads through the index only where every endpoint searched has it', async () => {
    const customer = { data: { customer: 'cus_4' } };
    const limits = { pageSize: 500, scanRows: 1_000 };
    const indexed = await everyPage({ contains: customer, endpoint: 'beta' }, limits);
    expect([...indexed.paths]).toEqual(['containment']);
    expect(indexed.readBack).toBe(0);
    // gamma's rows are not in the index: its payloads are matched among the rows read by time,
    // 1 000 at a time, so finding every match takes a page per 1 000 rows of history.
    const unindexed = await everyPage({ contains: customer, endpoint: 'gamma' }, limits);
    expect([...unindexed.paths]).toEqual(['time']);
    expect(unindexed.readBack).toBe(ROWS / 1_000);
    expect(ids(unindexed.seen)).toEqual(
      await expected(`payload @> '{"data":{"customer":"cus_4"}}' AND endpoint = 'gamma'`),
    );
    // Every endpoint, gamma among them: by time too, or gamma's matches would be missed.
    const everywhere = await everyPage({ contains: customer }, limits);
    expect([...everywhere.paths]).toEqual(['time']);
    expect(ids(everywhere.seen)).toEqual(await expected(`payload @> '{"data":{"customer":"cus_4"}}'`));
  });

  it('finds an event id on whichever endpoint has it, and only there', async () => {
    const page = await searchEvents(db.pool, { eventId: 'evt_42' }, ENDPOINTS, {
      pageSize: 10,
      scanRows: 1_000,
    });
    expect(ids(page.rows)).toEqual(['alpha/evt_42']);
    expect(page.path).toBe('event-id');
    const none = await searchEvents(db.pool, { eventId: 'evt_42', endpoint: 'beta' }, ENDPOINTS, {
      pageSize: 10,
      scanRows: 1_000,
    });
    expect(none.rows).toEqual([]);
  });
});
