import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { STANDARD_GAUGES_NAMED_TOTAL } from '../../services/core/metrics.ts';
import { createTestDatabase, type TestDatabase } from '../support/database.ts';
import { post, standardWebhook } from '../support/deliveries.ts';
import {
  type ObservedHookgate,
  parseExposition,
  run,
  sample,
  startObservedHookgate,
} from '../support/observability.ts';
import { statusCounts, waitFor, workerConfig } from '../support/worker-harness.ts';

const SECRET = 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw';
const WRONG_SECRET = 'whsec_C2FVsBQIhrscChlQIMV+b5sSYspob7oD';
const EP = 'obs';

let db: TestDatabase;
let hookgate: ObservedHookgate;

beforeAll(async () => {
  db = await createTestDatabase();
  const config = workerConfig({
    [EP]: {
      handler: 'project',
      extract: { entityType: '/data/object', entityId: '/data/id', version: '/data/version' },
    },
  });
  hookgate = await startObservedHookgate(db.url, config);
});

afterAll(async () => {
  await hookgate?.stop();
  await db?.drop();
});

const event = (eventId: string, data: Record<string, unknown>) =>
  standardWebhook(SECRET, {
    eventId,
    body: JSON.stringify({ type: 'thing.updated', data: { object: 'thing', ...data } }),
  });

describe('metrics after a scripted scenario', () => {
  it('match the database: accepted, duplicates, bad signatures, stale, dead', async () => {
    const send = async (delivery: ReturnType<typeof event>, expected: number) =>
      expect((await post(`${hookgate.url}/webhooks/${EP}`, delivery)).status).toBe(expected);

    // Three entities at version 2, each delivered twice more (duplicates).
    const fresh = [1, 2, 3].map((n) => event(`evt_new_${n}`, { id: `thing_${n}`, version: 2 }));
    for (const delivery of fresh) await send(delivery, 200);
    for (const delivery of fresh) {
      await send(delivery, 200);
      await send(delivery, 200);
    }
    await waitFor('v2 applied', async () => (await statusCounts(db.pool, EP)).processed === 3);

    // An older version of thing_1 arrives late: stale. An unkeyed event: dead at once (no retry).
    await send(event('evt_old_1', { id: 'thing_1', version: 1 }), 200);
    await send(event('evt_unkeyed', { note: 'no id' }), 200);
    // Bad signatures: refused, nothing stored.
    for (let i = 0; i < 4; i += 1) {
      const forged = standardWebhook(WRONG_SECRET, { eventId: `evt_forged_${i}` });
      await send(forged, 401);
    }
    await waitFor(
      'stale and dead settled',
      async () => {
        const counts = await statusCounts(db.pool, EP);
        return counts.stale === 1 && counts.dead === 1;
      },
      30_000,
    );

    const text = await hookgate.scrape();
    const samples = parseExposition(text);
    const counts = await statusCounts(db.pool, EP);
    const rows = Object.values(counts).reduce((a, b) => a + b, 0);
    const deadAttempts = (
      await db.pool.query<{ attempts: number }>(
        `SELECT attempts FROM hookgate.inbox WHERE endpoint = $1 AND status = 'dead'`,
        [EP],
      )
    ).rows[0]!.attempts;

    const deliveries = (outcome: string) =>
      sample(samples, 'hookgate_deliveries_total', { endpoint: EP, provider: 'standard-webhooks', outcome });
    expect(deliveries('accepted')).toBe(rows);
    expect(rows).toBe(5);
    expect(deliveries('duplicate')).toBe(6);
    expect(deliveries('signature_invalid')).toBe(4);
    expect(
      sample(samples, 'hookgate_ack_duration_seconds_count', { endpoint: EP, outcome: 'accepted' }),
    ).toBe(rows);

    const applied = (outcome: string) =>
      sample(samples, 'hookgate_events_applied_total', {
        endpoint: EP,
        event_type: 'thing.updated',
        outcome,
      });
    expect(applied('applied')).toBe(counts.processed);
    expect(applied('stale')).toBe(counts.stale);
    expect(applied('ignored')).toBe(counts.ignored ?? 0);
    expect(applied('dead')).toBe(counts.dead);
    expect(applied('parked')).toBe(counts.parked ?? 0);
    // Retrying cannot key a projection: one attempt, counted dead, never retried.
    expect(deadAttempts).toBe(1);
    expect(applied('retried') ?? 0).toBe(0);
    expect(sample(samples, 'hookgate_end_to_end_seconds_count', { endpoint: EP })).toBe(
      counts.processed! + counts.stale!,
    );

    for (const status of ['pending', 'parked', 'dead']) {
      expect(sample(samples, 'hookgate_backlog_events', { endpoint: EP, status })).toBe(counts[status] ?? 0);
    }
    expect(sample(samples, 'hookgate_backlog_oldest_age_seconds', { endpoint: EP })).toBe(0);
    expect(samples.has('hookgate_db_pool_connections{pool="gateway",state="total"}')).toBe(true);
    expect(samples.has('hookgate_db_pool_connections{pool="worker",state="waiting"}')).toBe(true);
    // prom-client's standard names, as stock Node.js dashboards query them, never prefixed.
    for (const name of [
      'process_cpu_seconds_total',
      'process_resident_memory_bytes',
      'nodejs_eventloop_lag_p99_seconds',
      'nodejs_heap_size_used_bytes',
      ...STANDARD_GAUGES_NAMED_TOTAL,
    ]) {
      expect(text, name).toMatch(new RegExp(`^${name}(\\{| )`, 'm'));
    }
    expect(text).not.toMatch(/^hookgate_(process|nodejs)_/m);

    // promtool's lint finds nothing but the three standard gauges prom-client names `_total`.
    const checked = await run('promtool', ['check', 'metrics'], text);
    expect(checked.output.trim().split('\n').sort()).toEqual(
      STANDARD_GAUGES_NAMED_TOTAL.map(
        (name) => `${name} non-counter metrics should not have "_total" suffix`,
      ),
    );
  });

  it('reports the oldest pending age and serves one cached reading to many scrapes', async () => {
    const { registerBacklogMetrics } = await import('../../services/core/read-models/backlog.ts');
    const { Registry } = await import('prom-client');
    await db.pool.query(
      `INSERT INTO hookgate.inbox (endpoint, event_id, provider, event_type, payload, received_at)
       VALUES ($1, 'evt_waiting', 'standard-webhooks', 'thing.updated', '{}', now() - interval '120 seconds')`,
      ['other'],
    );
    let queries = 0;
    const registry = new Registry();
    registerBacklogMetrics(registry, {
      db: {
        query: ((text: string) => {
          queries += 1;
          return db.pool.query(text);
        }) as typeof db.pool.query,
      },
      endpoints: [EP, 'other'],
      cacheMs: 60_000,
    });
    const scrapes = await Promise.all([1, 2, 3, 4].map(() => registry.metrics()));
    expect(queries).toBe(1);
    const samples = parseExposition(scrapes[0]!);
    expect(sample(samples, 'hookgate_backlog_events', { endpoint: 'other', status: 'pending' })).toBe(1);
    const age = sample(samples, 'hookgate_backlog_oldest_age_seconds', { endpoint: 'other' });
    expect(age).toBeGreaterThanOrEqual(120);
    expect(age).toBeLessThan(180);
    await registry.metrics();
    expect(queries).toBe(1);
  });

  it('reads the backlog through the partial indexes only', async () => {
    const { BACKLOG_BY_ENDPOINT } = await import('../../services/core/read-models/backlog.ts');
    const client = await db.pool.connect();
    try {
      // Without sequential scans the planner must still find an index matching each arm's
      // predicate; a full index (primary key, received_at) here would mean a history-sized scan.
      await client.query('SET enable_seqscan = off');
      const plan = (await client.query<{ 'QUERY PLAN': string }>(`EXPLAIN ${BACKLOG_BY_ENDPOINT}`)).rows
        .map((row) => row['QUERY PLAN'])
        .join('\n');
      // Each partition's copy of the parent's partial indexes (inbox_p…_endpoint_received_at_idx1
      // is the pending one's, named by PostgreSQL after its columns), never a full index.
      expect(plan).toMatch(/inbox_pending_idx|_endpoint_received_at_idx/);
      expect(plan).toMatch(/inbox_stuck_idx|_endpoint_status_received_at_idx/);
      expect(plan).not.toMatch(
        /inbox_pkey|(inbox_p\d{8}|inbox_default)_received_at_idx|key_idx|Seq Scan on inbox/,
      );
    } finally {
      await client.query('RESET enable_seqscan');
      client.release();
    }
  });
});
