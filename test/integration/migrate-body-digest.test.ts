import { createHash, randomUUID } from 'node:crypto';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { migrate, readMigrations } from '../../services/core/db/migrate.ts';
import { type Claim, claimBatch } from '../../services/core/inbox/claim.ts';
import { createTestDatabase, type TestDatabase } from '../support/database.ts';
import { Claimer, workerConfig } from '../support/worker-harness.ts';

// Migration 0008 moves the body digest from the received bytes to the payload's jsonb text, the
// digest the claim computes now on the gateway's path and the replay's alike. Rows stored before
// it must dedupe against claims made after it.
let db: TestDatabase;
let claimer: Claimer | undefined;

const sha256 = (text: string) => createHash('sha256').update(text).digest();

beforeAll(async () => {
  db = await createTestDatabase({ migrated: false });
  // The schema as it was before 0008, recorded in the ledger as `hookgate migrate` records it.
  await db.pool.query(`CREATE SCHEMA hookgate;
    CREATE TABLE hookgate.schema_migrations (version integer PRIMARY KEY, name text NOT NULL,
                                             applied_at timestamptz NOT NULL DEFAULT now())`);
  for (const migration of readMigrations().filter((m) => m.version < 8)) {
    await db.pool.query(migration.sql);
    await db.pool.query('INSERT INTO hookgate.schema_migrations (version, name) VALUES ($1, $2)', [
      migration.version,
      migration.name,
    ]);
  }
});

afterAll(async () => {
  await claimer?.stop();
  await db?.drop();
});

const bytes = {
  // Delivered by GitHub to the gateway, digested as received (0005).
  opened: '{"action": "opened",\n "issue": {"number": 1}}',
  // The same JSON again, from `hookgate replay` (no digest before 0008).
  openedReplayed: '{"action":"opened","issue":{"number":1}}',
  // Only ever replayed.
  closedReplayed: '{"action":"closed","issue":{"number":2}}',
  shopify: '{"id": 9, "admin_graphql_api_id": "gid://shopify/Order/9"}',
  signedId: '{"type": "thing.updated"}',
};

async function insertOld(
  endpoint: string,
  eventId: string,
  provider: string,
  body: string,
  digest: Buffer | null,
  via: string | null,
  receivedAt: string,
) {
  await db.pool.query(
    `INSERT INTO hookgate.inbox (endpoint, event_id, provider, event_type, payload, body_digest, received_via,
                                 received_at, status)
     VALUES ($1, $2, $3, 'x', $4::jsonb, $5, $6, $7, 'processed')`,
    [endpoint, eventId, provider, body, digest, via, receivedAt],
  );
}

function unsignedClaim(endpoint: string, provider: string, body: string): Claim {
  return {
    endpoint,
    provider,
    event: {
      eventId: `made-up-${randomUUID()}`,
      eventType: 'x',
      entityType: null,
      entityId: null,
      entityVersion: null,
      headers: {},
      idUnsigned: true,
    },
    body,
    traceparent: null,
  };
}

describe('migration 0008: canonical body digests', () => {
  it('re-digests stored rows, digests replayed GitHub rows, keeps the earliest of a shared body', async () => {
    await insertOld('gh', 'd-1', 'github', bytes.opened, sha256(bytes.opened), null, '2026-01-01T00:00:00Z');
    await insertOld('gh', 'g-1', 'github', bytes.openedReplayed, null, 'api_replay', '2026-01-02T00:00:00Z');
    await insertOld('gh', 'g-2', 'github', bytes.closedReplayed, null, 'api_replay', '2026-01-03T00:00:00Z');
    await insertOld(
      'shop',
      's-1',
      'shopify',
      bytes.shopify,
      sha256(bytes.shopify),
      null,
      '2026-01-01T00:00:00Z',
    );
    await insertOld('sw', 'w-1', 'standard-webhooks', bytes.signedId, null, null, '2026-01-01T00:00:00Z');

    const client = new pg.Client({ connectionString: db.url });
    await client.connect();
    try {
      expect((await migrate(client, db.url)).applied[0]).toBe('0008_inbox_canonical_body_digest');
    } finally {
      await client.end();
    }

    const rows = await db.pool.query<{ event_id: string; digest: string | null; canonical: string }>(
      `SELECT event_id, encode(body_digest, 'hex') AS digest,
              encode(sha256(convert_to(payload::text, 'UTF8')), 'hex') AS canonical
         FROM hookgate.inbox ORDER BY endpoint, event_id`,
    );
    const byId = Object.fromEntries(rows.rows.map((row) => [row.event_id, row]));
    expect(byId['d-1']!.digest).toBe(byId['d-1']!.canonical);
    // The replayed copy of d-1's body: already a second event, left as one without a digest.
    expect(byId['g-1']!.digest).toBeNull();
    expect(byId['g-2']!.digest).toBe(byId['g-2']!.canonical);
    expect(byId['s-1']!.digest).toBe(byId['s-1']!.canonical);
    expect(byId['w-1']!.digest).toBeNull();
  });

  it('after it, the claim finds the old rows by their bodies, however the bytes are spelled', async () => {
    claimer = await Claimer.start(
      db.url,
      workerConfig({
        gh: { provider: 'github', secrets: ['s'] },
        shop: { provider: 'shopify', secrets: ['s'] },
      }),
    );
    const results = await claimBatch(claimer.pool, claimer.boss, [
      unsignedClaim('gh', 'github', '{ "issue": { "number": 1 }, "action": "opened" }'),
      unsignedClaim('gh', 'github', bytes.closedReplayed.replace(/,/g, ', ')),
      unsignedClaim('shop', 'shopify', bytes.shopify),
    ]);
    expect(results).toEqual([
      { ok: true, outcome: 'duplicate' },
      { ok: true, outcome: 'duplicate' },
      { ok: true, outcome: 'duplicate' },
    ]);
  });
});
