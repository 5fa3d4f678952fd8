import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { dropQuarantined } from '../../services/core/quarantine/actions.ts';
import { runCliInProcess } from '../support/cli.ts';
import { createTestDatabase, type TestDatabase } from '../support/database.ts';
import { post, standardWebhook } from '../support/deliveries.ts';
import { SW_SECRET, startTestGateway, type TestGateway, testConfig } from '../support/gateway.ts';

// Quarantine is bounded (issue 23): a cap on held rows per endpoint (quarantine.maxHeldPerEndpoint)
// answered 503 quarantine_full once reached, so a verified delivery is refused retryably rather
// than acknowledged and lost; a gauge of held rows per endpoint and reason that falls when rows
// leave; retention for released and dropped rows through `hookgate prune`.
const CAP = 2;
let db: TestDatabase;
let gateway: TestGateway;

beforeAll(async () => {
  db = await createTestDatabase();
  gateway = await startTestGateway(
    db.url,
    testConfig({
      quarantine: { maxHeldPerEndpoint: CAP },
      endpoints: {
        alpha: { provider: 'standard-webhooks', secrets: [SW_SECRET] },
        beta: { provider: 'standard-webhooks', secrets: [SW_SECRET] },
      },
    }),
  );
});

afterAll(async () => {
  await gateway?.stop();
  await db?.drop();
});

// No `type` anywhere: each is quarantined as event_type_missing.
const untyped = (endpoint: string, n: number, at = new Date()) =>
  post(
    `${gateway.url}/webhooks/${endpoint}`,
    standardWebhook(SW_SECRET, { eventId: `msg_${endpoint}_${n}`, body: `{"n":${n}}`, at }),
  );

const heldRows = async (endpoint: string) =>
  (
    await db.pool.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM hookgate.quarantine
        WHERE endpoint = $1 AND released_at IS NULL AND dropped_at IS NULL`,
      [endpoint],
    )
  ).rows[0]!.n;

async function gauge(name: string, labels: Record<string, string>): Promise<number | undefined> {
  const metric = await gateway.registry.getSingleMetric(name)?.get();
  return metric?.values.find((value) =>
    Object.entries(labels).every(([key, wanted]) => value.labels[key] === wanted),
  )?.value;
}

/** The gauges are cached for 5 s per reading; this waits for a reading that shows `expected`. */
async function heldGauge(endpoint: string, expected: number): Promise<number | undefined> {
  const deadline = Date.now() + 15_000;
  let seen: number | undefined;
  while (Date.now() < deadline) {
    seen = await gauge('hookgate_quarantine_held', { endpoint, reason: 'event_type_missing' });
    if (seen === expected) return seen;
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
  return seen;
}

describe('the held-rows cap', () => {
  it('holds up to the cap, then answers 503 quarantine_full (retryable) and stores nothing', async () => {
    for (let n = 1; n <= CAP; n += 1) {
      const reply = await untyped('alpha', n);
      expect([reply.status, reply.json]).toEqual([
        200,
        { status: 'quarantined', reason: 'event_type_missing' },
      ]);
    }
    const full = await untyped('alpha', 99);
    expect(full.status).toBe(503);
    expect(full.headers['retry-after']).toBe('5');
    expect(full.json).toMatchObject({ error: 'quarantine_full' });
    expect(await heldRows('alpha')).toBe(CAP);
    const counted = await gateway.registry.getSingleMetric('hookgate_deliveries_total')?.get();
    expect(
      counted?.values.find((v) => v.labels.endpoint === 'alpha' && v.labels.outcome === 'quarantine_full')
        ?.value,
    ).toBe(1);
  });

  it("still answers 200 for a provider's retry of a held body, and keeps other endpoints apart", async () => {
    const retry = await untyped('alpha', 1, new Date(Date.now() + 1_000));
    expect([retry.status, retry.json]).toEqual([
      200,
      { status: 'quarantined', reason: 'event_type_missing' },
    ]);
    const other = await untyped('beta', 1);
    expect(other.status).toBe(200);
    expect(await heldRows('alpha')).toBe(CAP);
    expect(await heldRows('beta')).toBe(1);
  });

  it('reports held rows per endpoint and reason, and the cap, as gauges', async () => {
    expect(await heldGauge('alpha', CAP)).toBe(CAP);
    expect(await heldGauge('beta', 1)).toBe(1);
    expect(await gauge('hookgate_quarantine_held', { endpoint: 'alpha', reason: 'payload_unstorable' })).toBe(
      0,
    );
    expect(await gauge('hookgate_quarantine_held_limit', { endpoint: 'alpha' })).toBe(CAP);
  });

  it('takes the refused delivery once an operator makes room, and the gauge falls', async () => {
    const { rows } = await db.pool.query<{ id: string }>(
      `SELECT id::text AS id FROM hookgate.quarantine WHERE endpoint = 'alpha' ORDER BY id LIMIT 1`,
    );
    expect(
      (await dropQuarantined(db.pool, { ids: [rows[0]!.id], actor: 'test', reason: 'test traffic' })).dropped,
    ).toEqual([rows[0]!.id]);
    expect(await heldGauge('alpha', CAP - 1)).toBe(CAP - 1);
    // The provider's retry of the delivery refused at the cap.
    const retried = await untyped('alpha', 99, new Date(Date.now() + 2_000));
    expect(retried.status).toBe(200);
    expect(await heldRows('alpha')).toBe(CAP);
  });
});

describe('retention of released and dropped rows', () => {
  it('prune deletes released and dropped rows past the window, never held ones, and audits it', async () => {
    // Held rows stay, however old they are.
    const all = (
      await db.pool.query<{ id: string }>(`SELECT id::text AS id FROM hookgate.quarantine ORDER BY id`)
    ).rows.map((row) => row.id);
    expect(all).toHaveLength(4);
    const [droppedOld, heldOld, droppedNew, heldNew] = all as [string, string, string, string];
    await dropQuarantined(db.pool, { ids: [droppedNew], actor: 'test', reason: 'recent' });
    await db.pool.query(
      `UPDATE hookgate.quarantine SET received_at = now() - interval '30 days' WHERE id = ANY($1::bigint[])`,
      [[droppedOld, heldOld]],
    );
    await db.pool.query(
      `UPDATE hookgate.quarantine SET dropped_at = now() - interval '8 days' WHERE id = $1::bigint`,
      [droppedOld],
    );
    // Released rows too: marked as a release marks them, 8 days ago.
    await db.pool.query(
      `INSERT INTO hookgate.quarantine (endpoint, reason, message, body, body_digest, released_at, settled_by)
       VALUES ('beta', 'event_type_missing', 'm', '\\x7b7d', sha256('released'::bytea), now() - interval '8 days', 'test')`,
    );

    const env = { DATABASE_URL: db.url };
    const dry = await runCliInProcess(['prune', '--dry-run', '--json'], env);
    expect(dry.code, dry.output).toBe(0);
    expect(JSON.parse(dry.stdout)).toMatchObject({ dry_run: true, quarantine: 2 });
    const run = await runCliInProcess(['prune', '--json', '--actor', 'sre'], env);
    expect(run.code, run.output).toBe(0);
    expect(JSON.parse(run.stdout)).toMatchObject({ quarantine: 2 });
    const left = (
      await db.pool.query<{ id: string; held: boolean }>(
        `SELECT id::text AS id, released_at IS NULL AND dropped_at IS NULL AS held FROM hookgate.quarantine ORDER BY id`,
      )
    ).rows;
    expect(left).toEqual([
      { id: heldOld, held: true },
      { id: droppedNew, held: false },
      { id: heldNew, held: true },
    ]);
    const audit = await db.pool.query(
      `SELECT actor, filters->>'quarantine' AS quarantine, filters->>'quarantine_older_than_ms' AS window
         FROM hookgate.audit WHERE command = 'prune' AND NOT dry_run`,
    );
    expect(audit.rows).toEqual([{ actor: 'sre', quarantine: '2', window: String(7 * 86_400_000) }]);

    // A shorter window, as configured on the command line, takes the recent drop too.
    const short = await runCliInProcess(['prune', '--json', '--quarantine-older-than', '1m'], env);
    expect(JSON.parse(short.stdout)).toMatchObject({ quarantine: 0 });
    await db.pool.query(
      `UPDATE hookgate.quarantine SET dropped_at = now() - interval '2 minutes' WHERE id = $1::bigint`,
      [droppedNew],
    );
    const again = await runCliInProcess(['prune', '--json', '--quarantine-older-than', '1m'], env);
    expect(JSON.parse(again.stdout)).toMatchObject({ quarantine: 1 });
  });
});
