// The online conversion of a populated, unpartitioned inbox (migration 0021 and
// services/core/inbox/partitions.ts, convertInboxOnline), on PostgreSQL 15 and 18: a database of
// the release before (migrated to 0020, pg-boss installed, the roles granted) with 200 000 rows
// of the last 30 days is migrated to the end while the previous release's claim
// (CLAIM_INBOX_ROWS, its real text) keeps arriving on connections of a hookgate_runtime login,
// as a running gateway's do during an upgrade. Every claim must answer as it would have without
// the conversion (accepted exactly when new; duplicates of old rows, of rows claimed during the
// run and of bodies already stored refused), with no error, and leave one row and one key per
// event. Then the same with the migrating connection killed mid-way (twice) and migrate run
// again; and migrate on a converted inbox changes nothing.
//
// Claim latencies during the conversion are printed, never asserted: a time is a benchmark's.
import { randomBytes } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import pg from 'pg';
import { afterEach, describe, expect, it } from 'vitest';
import { migrate, migrationName, readMigrations } from '../../services/core/db/migrate.ts';
import { bodyDigestOf, CLAIM_INBOX_ROWS } from '../../services/core/inbox/claim-sql.ts';
import { inboxIsPartitioned, listInboxPartitions } from '../../services/core/inbox/partitions.ts';
import { createTestDatabase, type TestDatabase } from '../support/database.ts';

/** What migrating a database of the release before 0021 to the end applies: 0021 onwards, then the conversion. */
const FROM_0021 = [
  ...readMigrations()
    .filter((migration) => migration.version >= 21)
    .map(migrationName),
  'inbox partitioned (online conversion)',
];

// Enough for several backfill batches of 10 000 (the interrupted run is killed in the second).
const ROWS = 60_000;
const CLAIMERS = 3;
const MIGRATOR = 'conversion-test-migrate';
const PASSWORD = 'not-a-secret-test-only';

/** Two providers sign their ids; two send the id in an unsigned header (the body digest decides too). */
const ENDPOINTS = [
  { endpoint: 'stripe-live', provider: 'stripe', digest: false },
  { endpoint: 'github-org', provider: 'github', digest: true },
  { endpoint: 'shopify-shop', provider: 'shopify', digest: true },
  { endpoint: 'sw-billing', provider: 'standard-webhooks', digest: false },
] as const;
type Endpoint = (typeof ENDPOINTS)[number];

/** The payload of pre-existing row g (as the populating INSERT builds it). */
const prePayload = (g: number): string => JSON.stringify({ id: `pre_${g}`, kind: 'pre' });
const preEndpoint = (g: number): Endpoint => ENDPOINTS[g % ENDPOINTS.length]!;

const dbs: TestDatabase[] = [];
const clients: pg.Client[] = [];

afterEach(async () => {
  await Promise.all(clients.splice(0).map((c) => c.end().catch(() => {})));
  await Promise.all(dbs.splice(0).map((d) => d.drop()));
});

async function connect(url: string, applicationName: string): Promise<pg.Client> {
  const client = new pg.Client({ connectionString: url, application_name: applicationName });
  // A terminated backend (the interrupted migrations below) also emits an error event.
  client.on('error', () => {});
  await client.connect();
  clients.push(client);
  return client;
}

/** A database of the release before 0021, populated; returns it and a hookgate_runtime login's URL. */
async function previousRelease(): Promise<{ db: TestDatabase; runtimeUrl: string }> {
  const db = await createTestDatabase({ migrated: false });
  dbs.push(db);
  const client = await connect(db.url, MIGRATOR);
  await migrate(client, db.url, { until: 20, createRoles: true });
  await client.end();
  expect(
    (await db.pool.query('SELECT max(version)::int AS v FROM hookgate.schema_migrations')).rows[0].v,
  ).toBe(20);
  // Statuses in realistic shares (70 % processed, 10 % pending, dead, parked, discarded…); times
  // spread over the last 30 days, scattered (not in key order); body digests as the claim computes
  // them for the endpoints whose id header is unsigned.
  await db.pool.query(
    `INSERT INTO hookgate.inbox
       (endpoint, event_id, provider, event_type, payload, status, attempts, last_error, received_at,
        processed_at, body_digest, received_via, discarded_at, discarded_by, discard_reason)
     SELECT s.endpoint, s.event_id, s.provider, 'event.' || (s.g % 7), s.payload, s.status,
            CASE WHEN s.status IN ('dead', 'parked') THEN 5 ELSE 1 END,
            CASE WHEN s.status = 'dead' THEN 'handler failed' END, s.received_at,
            CASE WHEN s.status IN ('processed', 'ignored', 'stale') THEN s.received_at + interval '2 seconds' END,
            CASE WHEN s.digest THEN ${bodyDigestOf('s.payload')} END, 'gateway',
            CASE WHEN s.status = 'discarded' THEN s.received_at + interval '1 hour' END,
            CASE WHEN s.status = 'discarded' THEN 'ops' END,
            CASE WHEN s.status = 'discarded' THEN 'test data' END
       FROM (SELECT g, e.endpoint, e.provider, e.digest, 'pre_' || g AS event_id,
                    jsonb_build_object('id', 'pre_' || g, 'kind', 'pre') AS payload,
                    CASE WHEN g % 100 < 70 THEN 'processed' WHEN g % 100 < 80 THEN 'pending'
                         WHEN g % 100 < 85 THEN 'ignored' WHEN g % 100 < 88 THEN 'stale'
                         WHEN g % 100 < 92 THEN 'dead' WHEN g % 100 < 95 THEN 'parked'
                         ELSE 'discarded' END AS status,
                    now() - interval '1 second'
                      - make_interval(secs => ((g::bigint * 7919) % $1)::float8 * 2592000 / $1) AS received_at
               FROM generate_series(1, $1::int) g
               JOIN (SELECT * FROM unnest($2::text[], $3::text[], $4::boolean[]) WITH ORDINALITY
                       AS t(endpoint, provider, digest, ord)) e ON e.ord = g % 4 + 1) s`,
    [
      ROWS,
      ENDPOINTS.map((e) => e.endpoint),
      ENDPOINTS.map((e) => e.provider),
      ENDPOINTS.map((e) => e.digest),
    ],
  );
  await db.pool.query('ANALYZE hookgate.inbox');
  // What every pre-existing row must still be afterwards (outside hookgate's schemas).
  await db.pool.query(
    `CREATE TABLE public.rows_before AS
       SELECT endpoint, event_id, status, received_at, body_digest FROM hookgate.inbox`,
  );
  const login = `hgconv_${randomBytes(4).toString('hex')}`;
  await db.pool.query(`CREATE ROLE ${login} LOGIN PASSWORD '${PASSWORD}' IN ROLE hookgate_runtime`);
  const url = new URL(db.url);
  url.username = login;
  url.password = PASSWORD;
  return { db, runtimeUrl: url.toString() };
}

interface Item {
  readonly endpoint: Endpoint;
  readonly eventId: string;
  readonly payload: string;
  /** new: accepted; the others must be answered as duplicates. */
  readonly kind: 'new' | 'dup_pre' | 'dup_run' | 'dup_digest';
}

interface Claim {
  readonly items: readonly Item[];
  readonly accepted: ReadonlySet<string>;
  readonly startedAt: number;
  readonly ms: number;
}

/** The previous release's transactional claim: CLAIM_INBOX_ROWS in its own transaction. */
async function claimRows(client: Pick<pg.Client, 'query'>, items: readonly Item[]): Promise<Set<string>> {
  const col = <T>(f: (item: Item) => T): T[] => items.map(f);
  await client.query('BEGIN');
  try {
    const { rows } = await client.query<{ endpoint: string; event_id: string }>(CLAIM_INBOX_ROWS, [
      col((i) => i.endpoint.endpoint),
      col((i) => i.eventId),
      col((i) => i.endpoint.provider),
      col(() => 'event.test'),
      col(() => null),
      col(() => null),
      col(() => null),
      col((i) => i.payload),
      col(() => '{}'),
      col(() => null),
      col((i) => i.endpoint.digest),
      col(() => 'gateway'),
      col(() => null),
    ]);
    await client.query('COMMIT');
    return new Set(rows.map((r) => `${r.endpoint}/${r.event_id}`));
  } catch (error) {
    await client.query('ROLLBACK').catch(() => {});
    throw error;
  }
}

const keyOf = (item: Item): string => `${item.endpoint.endpoint}/${item.eventId}`;
const pick = <T>(list: readonly T[]): T => list[Math.floor(Math.random() * list.length)]!;

/**
 * Claimers on connections of the runtime login, until stopped: batches of four events, mostly
 * new, the rest duplicates of pre-existing rows, of rows accepted earlier in the run (committed),
 * and of stored bodies under a new id (endpoints with a body digest).
 */
function startClaimers(runtimeUrl: string) {
  const claims: Claim[] = [];
  const errors: string[] = [];
  const accepted: Item[] = [];
  let stopping = false;
  let serial = 0;
  const nextItem = (worker: number): Item => {
    const n = serial++;
    const roll = Math.random();
    if (roll < 0.15) {
      const g = 1 + Math.floor(Math.random() * ROWS);
      return { endpoint: preEndpoint(g), eventId: `pre_${g}`, payload: prePayload(g), kind: 'dup_pre' };
    }
    if (roll < 0.3 && accepted.length > 0) {
      const original = pick(accepted);
      return { ...original, kind: 'dup_run' };
    }
    if (roll < 0.4) {
      // Someone else's captured body under a made-up id: a stored row's, or one claimed this run.
      const runDigested = accepted.filter((i) => i.endpoint.digest);
      if (runDigested.length > 0 && Math.random() < 0.5) {
        const original = pick(runDigested);
        return {
          endpoint: original.endpoint,
          eventId: `dig_${worker}_${n}`,
          payload: original.payload,
          kind: 'dup_digest',
        };
      }
      // g ≡ 1 or 2 (mod 4): github-org or shopify-shop.
      const g = 4 * Math.floor(Math.random() * (ROWS / 4 - 1)) + 1 + (n % 2);
      return {
        endpoint: preEndpoint(g),
        eventId: `dig_${worker}_${n}`,
        payload: prePayload(g),
        kind: 'dup_digest',
      };
    }
    const endpoint = ENDPOINTS[n % ENDPOINTS.length]!;
    const eventId = `run_${worker}_${n}`;
    return { endpoint, eventId, payload: JSON.stringify({ id: eventId, kind: 'run' }), kind: 'new' };
  };
  const worker = async (index: number) => {
    const client = new pg.Client({ connectionString: runtimeUrl, application_name: `old-claim-${index}` });
    client.on('error', () => {});
    await client.connect();
    try {
      while (!stopping) {
        const items: Item[] = [];
        const keys = new Set<string>();
        while (items.length < 4) {
          const item = nextItem(index);
          // Distinct keys and bodies within a batch, so each item's answer is known in advance.
          if (keys.has(keyOf(item)) || keys.has(item.payload)) continue;
          keys.add(keyOf(item));
          keys.add(item.payload);
          items.push(item);
        }
        const startedAt = performance.now();
        try {
          const answer = await claimRows(client, items);
          claims.push({ items, accepted: answer, startedAt, ms: performance.now() - startedAt });
          for (const item of items) if (answer.has(keyOf(item))) accepted.push(item);
        } catch (error) {
          errors.push(`${(error as { code?: string }).code ?? '?'} ${(error as Error).message}`);
        }
        await new Promise((resolve) => setTimeout(resolve, 2));
      }
    } finally {
      await client.end().catch(() => {});
    }
  };
  const running = Array.from({ length: CLAIMERS }, (_, i) => worker(i));
  return {
    claims,
    errors,
    accepted,
    async waitForClaims(n: number): Promise<void> {
      while (claims.length + errors.length < n) await new Promise((resolve) => setTimeout(resolve, 10));
    },
    async stop(): Promise<void> {
      stopping = true;
      await Promise.all(running);
    },
  };
}

type Claimers = ReturnType<typeof startClaimers>;

/** The full migrate (the conversion included), timed, on a connection of its own. */
async function migrateToEnd(
  db: TestDatabase,
): Promise<{ applied: readonly string[]; from: number; to: number }> {
  const client = await connect(db.url, MIGRATOR);
  const from = performance.now();
  // Where the time goes, sampled from pg_stat_activity: for the printed figures only.
  const phases = new Map<string, number>();
  let sampling = true;
  const sampler = (async () => {
    while (sampling) {
      const { rows } = await db.pool.query<{ query: string; state: string; wait: string | null }>(
        `SELECT query, state, wait_event AS wait FROM pg_stat_activity WHERE application_name = $1`,
        [MIGRATOR],
      );
      for (const r of rows) {
        const phase = `${r.state === 'active' ? phaseOf(r.query) : r.state}${r.wait ? ` [${r.wait}]` : ''}`;
        phases.set(phase, (phases.get(phase) ?? 0) + 50);
      }
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  })();
  const report = await migrate(client, db.url, { createRoles: true });
  const to = performance.now();
  sampling = false;
  await sampler;
  await client.end();
  console.log(
    `migrate's connection, sampled every 50 ms (~ms per phase): ${[...phases]
      .sort((a, b) => b[1] - a[1])
      .slice(0, 8)
      .map(([p, ms]) => `${p} ${ms}`)
      .join('; ')}`,
  );
  return { applied: report.applied, from, to };
}

function phaseOf(query: string): string {
  const text = query.replace(/\s+/g, ' ').trim();
  if (text.includes('INSERT INTO hookgate.inbox_keys')) return 'backfill';
  return text.slice(0, 48);
}

function latencyDuring(claimers: Claimers, from: number, to: number) {
  const during = claimers.claims.filter((c) => c.startedAt + c.ms >= from && c.startedAt <= to);
  const ms = during.map((c) => c.ms).sort((a, b) => a - b);
  const at = (q: number) => (ms.length ? ms[Math.min(ms.length - 1, Math.floor(q * ms.length))]! : 0);
  return { claims: during.length, p50: at(0.5), p99: at(0.99), max: ms.at(-1) ?? 0 };
}

async function count(db: TestDatabase, sql: string, params: unknown[] = []): Promise<number> {
  return Number((await db.pool.query<{ n: string }>(sql, params)).rows[0]!.n);
}

/** Everything the conversion must leave, whatever happened during it. */
async function expectConverted(db: TestDatabase, claimers: Claimers, runtimeUrl: string): Promise<void> {
  expect({ failed: claimers.errors.length, errors: [...new Set(claimers.errors)] }).toEqual({
    failed: 0,
    errors: [],
  });
  expect(await inboxIsPartitioned(db.pool)).toBe(true);
  const partitions = (await listInboxPartitions(db.pool)).map((p) => p.name);
  expect(partitions[0]).toBe('inbox_unpartitioned');
  expect(partitions.length).toBeGreaterThan(1);
  expect(await count(db, `SELECT count(*) AS n FROM pg_class WHERE relname = 'inbox_default'`)).toBe(1);

  // Every claim answered as it would have without the conversion.
  const wrong = claimers.claims.flatMap((c) =>
    c.items
      .filter((item) => c.accepted.has(keyOf(item)) !== (item.kind === 'new'))
      .map((item) => `${item.kind} ${keyOf(item)} accepted=${c.accepted.has(keyOf(item))}`),
  );
  expect(wrong).toEqual([]);
  const accepted = claimers.accepted;
  expect(accepted.length).toBeGreaterThan(0);
  expect(new Set(accepted.map(keyOf)).size).toBe(accepted.length);

  // Each accepted event is exactly one row; no key has two; nothing refused left a row.
  const acceptedRows = await db.pool.query<{ n: string; missing: string }>(
    `SELECT count(i.event_id) AS n, count(*) FILTER (WHERE i.event_id IS NULL) AS missing
       FROM unnest($1::text[], $2::text[]) a(endpoint, event_id)
       LEFT JOIN hookgate.inbox i ON i.endpoint = a.endpoint AND i.event_id = a.event_id`,
    [accepted.map((i) => i.endpoint.endpoint), accepted.map((i) => i.eventId)],
  );
  expect(acceptedRows.rows[0]).toEqual({ n: String(accepted.length), missing: '0' });
  expect(
    await count(
      db,
      `SELECT count(*) AS n FROM (SELECT 1 FROM hookgate.inbox GROUP BY endpoint, event_id HAVING count(*) > 1) d`,
    ),
  ).toBe(0);
  expect(await count(db, `SELECT count(*) AS n FROM hookgate.inbox WHERE event_id LIKE 'dig\\_%'`)).toBe(0);
  const total = await count(db, 'SELECT count(*) AS n FROM hookgate.inbox');
  expect(total).toBe(ROWS + accepted.length);

  // Every pre-existing row as it was.
  expect(
    await count(
      db,
      `SELECT count(*) AS n FROM public.rows_before b
        WHERE NOT EXISTS (SELECT 1 FROM hookgate.inbox i
                           WHERE i.endpoint = b.endpoint AND i.event_id = b.event_id AND i.status = b.status
                             AND i.received_at = b.received_at
                             AND i.body_digest IS NOT DISTINCT FROM b.body_digest)`,
    ),
  ).toBe(0);

  // One key per row, both ways.
  expect(await count(db, 'SELECT count(*) AS n FROM hookgate.inbox_keys')).toBe(total);
  expect(
    await count(
      db,
      `SELECT count(*) AS n FROM hookgate.inbox i
        WHERE NOT EXISTS (SELECT 1 FROM hookgate.inbox_keys k
                           WHERE k.endpoint = i.endpoint AND k.event_id = i.event_id
                             AND k.received_at = i.received_at
                             AND k.body_digest IS NOT DISTINCT FROM i.body_digest)`,
    ),
  ).toBe(0);
  expect(
    await count(
      db,
      `SELECT count(*) AS n FROM hookgate.inbox_keys k
        WHERE NOT EXISTS (SELECT 1 FROM hookgate.inbox i
                           WHERE i.endpoint = k.endpoint AND i.event_id = k.event_id
                             AND i.received_at = k.received_at
                             AND i.body_digest IS NOT DISTINCT FROM k.body_digest)`,
    ),
  ).toBe(0);

  // Afterwards, through the same statement and role: every event id seen is a duplicate, and so
  // is every stored body under a new id.
  const runtime = await connect(runtimeUrl, 'after-claim');
  const redelivered: Item[] = [
    ...Array.from({ length: ROWS }, (_, i): Item => {
      const g = i + 1;
      return { endpoint: preEndpoint(g), eventId: `pre_${g}`, payload: prePayload(g), kind: 'dup_pre' };
    }),
    ...accepted.map((item): Item => ({ ...item, kind: 'dup_run' })),
    ...Array.from({ length: 2_000 }, (_, i): Item => {
      const g = 4 * i + 1 + (i % 2);
      return {
        endpoint: preEndpoint(g),
        eventId: `dig_after_${i}`,
        payload: prePayload(g),
        kind: 'dup_digest',
      };
    }),
    ...accepted
      .filter((item) => item.endpoint.digest)
      .map((item, i): Item => ({ ...item, eventId: `dig_after_run_${i}`, kind: 'dup_digest' })),
  ];
  for (let i = 0; i < redelivered.length; i += 10_000) {
    expect([...(await claimRows(runtime, redelivered.slice(i, i + 10_000)))]).toEqual([]);
  }
  expect(await count(db, 'SELECT count(*) AS n FROM hookgate.inbox')).toBe(total);
  // And a new event is still accepted, once.
  const fresh: Item = {
    endpoint: ENDPOINTS[1],
    eventId: 'after_new',
    payload: '{"id":"after_new"}',
    kind: 'new',
  };
  expect([...(await claimRows(runtime, [fresh]))]).toEqual(['github-org/after_new']);
  expect([...(await claimRows(runtime, [fresh]))]).toEqual([]);
}

/** Kills the migrating connection once it runs a statement matching `pattern`; resolves when it did. */
async function killWhen(
  db: TestDatabase,
  pattern: RegExp,
  signal: { done: boolean },
  ready = 'SELECT true AS ready',
): Promise<string> {
  for (;;) {
    if (signal.done) throw new Error(`migrate finished before a statement matching ${pattern} was seen`);
    const { rows } = await db.pool.query<{ pid: number; query: string }>(
      `SELECT pid, query FROM pg_stat_activity WHERE application_name = $1 AND state = 'active'`,
      [MIGRATOR],
    );
    const matching = rows.find((r) => pattern.test(r.query));
    const running =
      matching && (await db.pool.query<{ ready: boolean }>(ready)).rows[0]?.ready === true
        ? matching
        : undefined;
    if (running) {
      await db.pool.query('SELECT pg_terminate_backend($1)', [running.pid]);
      return running.query;
    }
    await new Promise((resolve) => setTimeout(resolve, 2));
  }
}

/** Runs migrate to be killed at `pattern`; it must fail (its connection gone). */
async function interruptedMigrate(db: TestDatabase, pattern: RegExp, ready?: string): Promise<void> {
  const client = await connect(db.url, MIGRATOR);
  const signal = { done: false };
  const run = migrate(client, db.url, { createRoles: true }).finally(() => {
    signal.done = true;
  });
  const [outcome, killed] = await Promise.allSettled([run, killWhen(db, pattern, signal, ready)]);
  expect(killed.status).toBe('fulfilled');
  expect(outcome.status).toBe('rejected');
  expect(await inboxIsPartitioned(db.pool)).toBe(false);
}

describe('hookgate migrate converts a populated inbox online', () => {
  it('while the previous release keeps claiming: every answer right, one row and one key per event', async () => {
    const { db, runtimeUrl } = await previousRelease();
    const claimers = startClaimers(runtimeUrl);
    try {
      await claimers.waitForClaims(200);
      const run = await migrateToEnd(db);
      expect(run.applied).toEqual(FROM_0021);
      const before = claimers.claims.length;
      await claimers.waitForClaims(before + 200);
      await claimers.stop();
      const latency = latencyDuring(claimers, run.from, run.to);
      console.log(
        `conversion of ${ROWS} rows: migrate ${(run.to - run.from).toFixed(0)} ms; ${latency.claims} claims during it: ` +
          `p50 ${latency.p50.toFixed(1)} ms, p99 ${latency.p99.toFixed(1)} ms, max ${latency.max.toFixed(1)} ms; ` +
          `${claimers.claims.length} claims in all, ${claimers.accepted.length} events accepted`,
      );
      expect(latency.claims).toBeGreaterThan(0);
    } finally {
      await claimers.stop();
    }
    await expectConverted(db, claimers, runtimeUrl);
  }, 600_000);

  it('interrupted during the backfill and during the index build, then run again to the end', async () => {
    const { db, runtimeUrl } = await previousRelease();
    const claimers = startClaimers(runtimeUrl);
    try {
      await claimers.waitForClaims(100);
      // The backfill's second batch on (the first starts from no key): some keys are recorded.
      await interruptedMigrate(db, /\(endpoint, event_id\) > \(\$2::text, \$3::text\)/);
      const keys = await count(db, 'SELECT count(*) AS n FROM hookgate.inbox_keys');
      expect(keys).toBeGreaterThan(0);
      expect(keys).toBeLessThan(ROWS);
      await claimers.waitForClaims(claimers.claims.length + 100);
      // Once the build has made the index's catalog entry (its first transaction), not before.
      await interruptedMigrate(
        db,
        /CREATE INDEX CONCURRENTLY inbox_key_idx/,
        `SELECT to_regclass('hookgate.inbox_key_idx') IS NOT NULL AS ready`,
      );
      // The stopped build left an invalid index, which the next run drops and builds again.
      expect(
        (
          await db.pool.query(
            `SELECT i.indisvalid AS valid FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
              WHERE c.relname = 'inbox_key_idx'`,
          )
        ).rows,
      ).toEqual([{ valid: false }]);
      await claimers.waitForClaims(claimers.claims.length + 100);
      const run = await migrateToEnd(db);
      // 0021 itself was recorded by the first run: only the conversion is left.
      expect(run.applied).toEqual(['inbox partitioned (online conversion)']);
      await claimers.waitForClaims(claimers.claims.length + 200);
      await claimers.stop();
      const latency = latencyDuring(claimers, run.from, run.to);
      console.log(
        `resumed conversion: migrate ${(run.to - run.from).toFixed(0)} ms; ${latency.claims} claims during it: ` +
          `p50 ${latency.p50.toFixed(1)} ms, p99 ${latency.p99.toFixed(1)} ms, max ${latency.max.toFixed(1)} ms`,
      );
    } finally {
      await claimers.stop();
    }
    await expectConverted(db, claimers, runtimeUrl);
  }, 600_000);

  it('migrating a converted inbox again changes nothing', async () => {
    const db = await createTestDatabase({ migrated: false });
    dbs.push(db);
    const client = await connect(db.url, MIGRATOR);
    await migrate(client, db.url, { until: 20 });
    await db.pool.query(
      `INSERT INTO hookgate.inbox (endpoint, event_id, provider, event_type, payload, status, received_at)
       SELECT 'sw-billing', 'pre_' || g, 'standard-webhooks', 't', '{}', 'processed', now() - make_interval(hours => g)
         FROM generate_series(1, 1000) g`,
    );
    expect((await migrate(client, db.url)).applied).toEqual(FROM_0021);
    const shape = async () =>
      (
        await db.pool.query(
          `SELECT c.relname, c.relkind, c.oid::int AS oid FROM pg_class c
            WHERE c.relnamespace = 'hookgate'::regnamespace AND c.relname LIKE 'inbox%' ORDER BY c.relname`,
        )
      ).rows;
    const before = await shape();
    const partitions = await listInboxPartitions(db.pool);
    expect((await migrate(client, db.url)).applied).toEqual([]);
    expect(await shape()).toEqual(before);
    expect(await listInboxPartitions(db.pool)).toEqual(partitions);
    expect(await count(db, 'SELECT count(*) AS n FROM hookgate.inbox')).toBe(1000);
    expect(await count(db, 'SELECT count(*) AS n FROM hookgate.inbox_keys')).toBe(1000);
  });
});

describe('hookgate migrate behind a long reader of the inbox', () => {
  it('waits out the lock for the bound on received_at as it does for the switch, instead of failing', async () => {
    const db = await createTestDatabase({ migrated: false });
    dbs.push(db);
    const client = await connect(db.url, MIGRATOR);
    await migrate(client, db.url, { until: 20 });
    await db.pool.query(
      `INSERT INTO hookgate.inbox (endpoint, event_id, provider, event_type, payload, status, received_at)
       SELECT 'sw-billing', 'pre_' || g, 'standard-webhooks', 't', '{}', 'processed', now() - make_interval(hours => g)
         FROM generate_series(1, 1000) g`,
    );
    // A report (or a pg_dump) reading the inbox in a transaction that outlasts one lock_timeout.
    const reader = await connect(db.url, 'long-reader');
    await reader.query('BEGIN');
    await reader.query('SELECT count(*) FROM hookgate.inbox');
    const run = migrate(client, db.url);
    run.catch(() => {});
    for (;;) {
      const { rows } = await db.pool.query(
        `SELECT 1 FROM pg_stat_activity
          WHERE application_name = $1 AND wait_event_type = 'Lock' AND query LIKE '%inbox_before_partitions%'`,
        [MIGRATOR],
      );
      if (rows.length > 0) break;
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
    // Longer than the 2 s the statement waits, shorter than the switch's retries.
    await new Promise((resolve) => setTimeout(resolve, 3_000));
    await reader.query('COMMIT');
    expect((await run).applied).toEqual(FROM_0021);
    expect(await inboxIsPartitioned(db.pool)).toBe(true);
  });
});
