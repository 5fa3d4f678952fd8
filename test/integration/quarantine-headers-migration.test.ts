import { createHash } from 'node:crypto';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readMigrations } from '../../services/core/db/migration-files.ts';
import { migrate } from '../../services/core/migrate/migrate.ts';
import { createTestDatabase, type TestDatabase } from '../support/database.ts';

// Migration 0025: quarantined rows stored before the allow-list keep only the headers a built-in
// provider names for identifying or reading a delivery (a GitLab token, a basic-auth header, a
// signature and whatever else the request carried are removed), and an insert by a gateway of the
// previous release (a rolling upgrade) loses every built-in provider's signature and token header.
let db: TestDatabase;
let client: pg.Client;

beforeAll(async () => {
  db = await createTestDatabase({ migrated: false });
  client = new pg.Client({ connectionString: db.url });
  await client.connect();
  // As the release before 0025 left it: its migrations only.
  await migrate(client, db.url, {
    migrations: readMigrations().filter((migration) => migration.version < 25),
    createRoles: true,
  });
});

afterAll(async () => {
  await client?.end();
  await db?.drop();
});

const digest = (text: string) => createHash('sha256').update(text).digest();

async function insert(endpoint: string, body: string, headers: Record<string, string>, as?: string) {
  await client.query('BEGIN');
  try {
    if (as) await client.query(`SET LOCAL ROLE ${as}`);
    await client.query(
      `INSERT INTO hookgate.quarantine (endpoint, reason, message, body, headers, body_digest)
       VALUES ($1, 'event_type_missing', 'no type', $2, $3, $4)`,
      [endpoint, Buffer.from(body), JSON.stringify(headers), digest(body)],
    );
    await client.query('COMMIT');
  } catch (error) {
    await client.query('ROLLBACK');
    throw error;
  }
}

const headersOf = async (endpoint: string) =>
  (await client.query('SELECT headers FROM hookgate.quarantine WHERE endpoint = $1', [endpoint])).rows[0]
    ?.headers as Record<string, string>;

describe('migration 0025: quarantined headers', () => {
  it("redacts rows stored before it to the built-in providers' identity and delivery headers", async () => {
    await insert('gitlab', '{"a":1}', {
      'x-gitlab-token': 'gitlab-shared-token',
      'idempotency-key': 'k-1',
      'x-gitlab-event': 'Push Hook',
      'user-agent': 'GitLab/17.4',
      'content-type': 'application/json',
    });
    await insert('okta', '{"a":2}', { authorization: 'okta-shared-token', 'x-forwarded-for': '203.0.113.9' });
    await insert('stripe', '{"a":3}', { 'stripe-signature': 't=1,v1=abc' });
    await insert('github', '{"a":4}', {
      'x-hub-signature-256': 'sha256=abc',
      'x-hub-signature': 'sha1=abc',
      'x-github-delivery': 'd-1',
      'x-github-event': 'issues',
    });
    // A `scheme` endpoint's own token header: not a name any built-in provider keeps.
    await insert('relay', '{"a":5}', { 'x-relay-word': 'relay-shared-token', 'x-delivery': 'r-1' });
    await insert('empty', '{"a":6}', {});

    await migrate(client, db.url);

    expect(await headersOf('gitlab')).toEqual({ 'idempotency-key': 'k-1', 'x-gitlab-event': 'Push Hook' });
    expect(await headersOf('okta')).toEqual({});
    expect(await headersOf('stripe')).toEqual({});
    expect(await headersOf('github')).toEqual({ 'x-github-delivery': 'd-1', 'x-github-event': 'issues' });
    expect(await headersOf('relay')).toEqual({});
    expect(await headersOf('empty')).toEqual({});
    const all = await client.query("SELECT string_agg(headers::text, ' ') AS text FROM hookgate.quarantine");
    expect(all.rows[0].text).not.toMatch(/shared-token|abc/);
  });

  it("strips the built-in providers' secret headers from an insert by a gateway of the previous release", async () => {
    const old = {
      'x-gitlab-token': 'gitlab-shared-token',
      authorization: 'Basic cG06cGFzc3dvcmQ=',
      'svix-signature': 'v1,abc',
      'x-twilio-signature': 'abc',
      cookie: 'session=abc',
      'idempotency-key': 'k-2',
      'x-event-id': 'custom-id',
    };
    // As the gateways' role, which inserts quarantined deliveries.
    await insert('rolling', '{"a":7}', old, 'hookgate_runtime');
    expect(await headersOf('rolling')).toEqual({ 'idempotency-key': 'k-2', 'x-event-id': 'custom-id' });
  });
});
