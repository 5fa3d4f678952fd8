import { chmodSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type EmbeddedDatabase, freePort, startEmbeddedPostgres } from '../../services/core/db/embedded.ts';
import { migrate } from '../../services/core/migrate/migrate.ts';
import { post, standardWebhook } from '../support/deliveries.ts';
import { SW_SECRET, startTestGateway, type TestGateway, testConfig } from '../support/gateway.ts';

// This file owns a PostgreSQL of its own, because it stops and restarts it.
let dir: string;
let port: number;
let database: EmbeddedDatabase;
let gateway: TestGateway;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'hookgate-outage-'));
  chmodSync(dir, 0o755);
  port = await freePort();
  database = await startEmbeddedPostgres(dir, { port });
  const client = new pg.Client({ connectionString: database.url });
  await client.connect();
  await migrate(client, database.url);
  await client.end();
  gateway = await startTestGateway(
    database.url,
    testConfig({ claim: { maxWait: '2ms' }, database: { connectTimeout: '500ms', statementTimeout: '2s' } }),
  );
});

afterAll(async () => {
  await gateway?.stop();
  await database?.stop();
  rmSync(dir, { recursive: true, force: true });
});

async function count(eventIds: readonly string[]): Promise<number> {
  const client = new pg.Client({ connectionString: database.url });
  await client.connect();
  try {
    const result = await client.query(
      'SELECT count(*)::int AS n FROM hookgate.inbox WHERE event_id = ANY($1)',
      [eventIds],
    );
    return result.rows[0].n;
  } finally {
    await client.end();
  }
}

describe('PostgreSQL goes away', () => {
  it('answers 503 with Retry-After while it is down, never 2xx, and accepts again once it is back', async () => {
    const before = standardWebhook(SW_SECRET);
    expect((await post(`${gateway.url}/webhooks/alpha`, before)).status).toBe(200);

    await database.stop();
    const during = Array.from({ length: 5 }, () => standardWebhook(SW_SECRET));
    const replies = await Promise.all(during.map((d) => post(`${gateway.url}/webhooks/alpha`, d)));
    for (const reply of replies) {
      expect(reply.status).toBe(503);
      expect(reply.headers['retry-after']).toBe('5');
    }
    const ready = await fetch(`${gateway.url}/readyz`);
    expect(ready.status).toBe(503);

    database = await startEmbeddedPostgres(dir, { port });
    // Nothing half-written: only the delivery acknowledged before the outage exists.
    expect(await count([before.eventId, ...during.map((d) => d.eventId)])).toBe(1);

    const after = during[0]!;
    const retried = await post(`${gateway.url}/webhooks/alpha`, after);
    expect([retried.status, retried.json.status]).toEqual([200, 'accepted']);
    expect(await count([after.eventId])).toBe(1);
    expect((await fetch(`${gateway.url}/readyz`)).status).toBe(200);
  });
});
