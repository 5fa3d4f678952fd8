import { createHash } from 'node:crypto';
import type pg from 'pg';

/**
 * A large inbox as months of payment traffic leave it, for the console's plan tests and its
 * search benchmark: four endpoints (one of them rare), Stripe-like payloads with a customer each
 * customer appearing about 20 times, an entity (invoice) on every row, mostly processed with a
 * thin backlog of pending, parked and dead rows, received over 30 days.
 */
export const CONSOLE_ENDPOINTS = ['github', 'rare', 'shop', 'stripe'] as const;
const TYPES = [
  'invoice.paid',
  'invoice.created',
  'customer.updated',
  'charge.refunded',
  'payment_intent.succeeded',
];
export const CUSTOMERS = 50_000;
export const INVOICES = 250_000;

const FILL = `
  INSERT INTO hookgate.inbox (endpoint, event_id, provider, event_type, entity_type, entity_id, payload, headers,
                              status, attempts, last_error, received_at, processed_at, payload_search)
  SELECT endpoint, event_id, 'standard-webhooks', event_type, 'invoice', 'in_' || (n % ${INVOICES}),
         jsonb_build_object(
           'id', event_id, 'type', event_type, 'created', 1700000000 + n,
           'data', jsonb_build_object('object', jsonb_build_object(
             'id', 'in_' || (n % ${INVOICES}), 'object', 'invoice', 'customer', 'cus_' || (n % ${CUSTOMERS}),
             'amount_due', n % 10000, 'currency', 'usd', 'description', 'Invoice ' || n || ' for services',
             'lines', jsonb_build_array(jsonb_build_object('price', 'price_' || (n % 40), 'quantity', 1 + n % 3))))),
         '{}'::jsonb, status, CASE WHEN status IN ('dead', 'parked') THEN 8 WHEN status = 'pending' THEN 0 ELSE 1 END,
         CASE WHEN status IN ('dead', 'parked') THEN 'handler_error: downstream answered 503' END,
         received_at,
         CASE WHEN status IN ('processed', 'ignored') THEN received_at + (n % 50) * interval '10 milliseconds' END,
         CASE WHEN endpoint = ANY ($4::text[]) THEN true END
    FROM (
      SELECT n,
             CASE WHEN n % 200 = 0 THEN 'rare' WHEN n % 3 = 0 THEN 'github' WHEN n % 3 = 1 THEN 'stripe' ELSE 'shop' END AS endpoint,
             'evt_' || lpad(n::text, 9, '0') AS event_id,
             (ARRAY['${TYPES.join("','")}'])[1 + n % ${TYPES.length}] AS event_type,
             CASE WHEN n % 1000 = 7 THEN 'dead' WHEN n % 1000 = 8 THEN 'parked' WHEN n % 500 = 9 THEN 'pending'
                  WHEN n % 97 = 0 THEN 'ignored' ELSE 'processed' END AS status,
             now() - ($3::int - n) * interval '2592 milliseconds' AS received_at
        FROM generate_series($1::int, $2::int) AS n
    ) rows`;

/** What the inbox's key trigger (the baseline migration's) writes for each row the fill inserts. */
const KEYS = `
  INSERT INTO hookgate.inbox_keys (endpoint, event_id, body_digest, received_at)
  SELECT endpoint, event_id, body_digest, received_at FROM hookgate.inbox`;

/** 30 days of per-minute counts, two claim shards per endpoint. */
const COUNTS = `
  INSERT INTO hookgate.delivery_counts (endpoint, minute, shard, accepted, duplicate)
  SELECT endpoint, date_trunc('minute', now()) - m * interval '1 minute', s, 20 + (m * 7 + s) % 30, (m + s) % 4
    FROM unnest($1::text[]) AS endpoint, generate_series(0, 30 * 1440 - 1) AS m, generate_series(0, 1) AS s`;

/** The console's search indexes, dropped before the fill and built again after it (faster than row by row). */
const SEARCH_INDEXES = `
  SELECT pg_get_indexdef(c.oid) AS def FROM pg_class c
   WHERE c.oid IN ('hookgate.inbox_payload_path_idx'::regclass, 'hookgate.inbox_entity_idx'::regclass)`;

/**
 * Fills the inbox with `rows` rows (in chunks, each its own statement) and their keys, the
 * delivery counts of 30 days (as retention keeps them; the overview reads the last hour), then
 * builds the console's search indexes again as the schema defines them and analyses, as
 * autovacuum would have. The rows of the `payloadSearch` endpoints are marked for the payload
 * index, as their claims would mark them (every endpoint unless said otherwise).
 */
export async function fillConsoleInbox(
  client: pg.ClientBase,
  rows: number,
  onChunk?: (done: number) => void,
  payloadSearch: readonly string[] = CONSOLE_ENDPOINTS,
): Promise<void> {
  // pg_get_indexdef spells a partitioned table's index `ON ONLY` the parent: built so, it would
  // cover no partition.
  const indexes = (await client.query<{ def: string }>(SEARCH_INDEXES)).rows.map((row) =>
    row.def.replace(' ON ONLY ', ' ON '),
  );
  await client.query('DROP INDEX hookgate.inbox_payload_path_idx, hookgate.inbox_entity_idx');
  // The deduplication keys are written in one statement after the rows instead of by the key
  // trigger row by row (triggers are off for the load): the rows are distinct by construction,
  // and the same keys result at a fraction of the time.
  await client.query('SET session_replication_role = replica');
  try {
    const chunk = 100_000;
    for (let from = 1; from <= rows; from += chunk) {
      const to = Math.min(rows, from + chunk - 1);
      await client.query(FILL, [from, to, rows, [...payloadSearch]]);
      onChunk?.(to);
    }
    await client.query(KEYS);
  } finally {
    await client.query('RESET session_replication_role');
  }
  await client.query(COUNTS, [[...CONSOLE_ENDPOINTS]]);
  await client.query(`SET maintenance_work_mem = '256MB'`);
  for (const statement of indexes) await client.query(statement);
  await client.query('RESET maintenance_work_mem');
  await client.query('ANALYZE hookgate.inbox');
  await client.query('ANALYZE hookgate.delivery_counts');
}

export const eventIdOf = (n: number) => `evt_${String(n).padStart(9, '0')}`;

export interface ConsoleSearch {
  readonly name: string;
  /** The events page's query string. */
  readonly query: Record<string, string>;
}

/** Searches an on-call engineer or a support agent runs, with values the filled inbox holds, varied by `seed`. */
export function consoleSearches(rows: number, seed: number): ConsoleSearch[] {
  const pick = (range: number, salt: number) => {
    const digest = createHash('sha256').update(`${seed}:${salt}`).digest();
    return digest.readUInt32BE(0) % range;
  };
  const n = 1 + pick(rows, 1);
  const customer = `cus_${pick(CUSTOMERS, 2)}`;
  const invoice = `in_${pick(INVOICES, 3)}`;
  const type = TYPES[pick(TYPES.length, 4)]!;
  return [
    { name: 'newest', query: {} },
    { name: 'endpoint', query: { endpoint: 'stripe' } },
    { name: 'rare endpoint', query: { endpoint: 'rare' } },
    { name: 'type on endpoint', query: { endpoint: 'shop', type } },
    { name: 'status dead', query: { status: 'dead' } },
    { name: 'status pending, endpoint', query: { endpoint: 'github', status: 'pending' } },
    { name: 'status ignored', query: { status: 'ignored' } },
    { name: 'time range', query: { since: '3d', until: '2d' } },
    { name: 'event id', query: { event_id: eventIdOf(n) } },
    { name: 'event id, unknown', query: { event_id: `evt_missing_${seed}` } },
    { name: 'entity id', query: { entity_id: invoice } },
    { name: 'payload customer', query: { contains: JSON.stringify({ data: { object: { customer } } }) } },
    {
      name: 'payload customer on endpoint',
      query: { endpoint: 'stripe', contains: JSON.stringify({ data: { object: { customer } } }) },
    },
    {
      name: 'payload, no match',
      query: { contains: JSON.stringify({ data: { object: { customer: `cus_none_${seed}` } } }) },
    },
  ];
}
