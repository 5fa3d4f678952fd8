import { createHmac, randomUUID } from 'node:crypto';
import { sign as githubSign } from '@octokit/webhooks-methods';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase, type TestDatabase } from '../support/database.ts';
import { post, standardWebhook } from '../support/deliveries.ts';
import {
  SHOPIFY_SECRET,
  SW_SECRET,
  startTestGateway,
  type TestGateway,
  testConfig,
} from '../support/gateway.ts';

// Providers that sign only the body carry their event id (and type) in unsigned headers: a
// captured body re-sent under new headers must be a duplicate, not a new event.
const GITHUB_SECRET = 'github-secret-for-replay-tests';
const HMAC_SECRET = 'hmac-secret-for-replay-tests';

let db: TestDatabase;
let gateway: TestGateway;

beforeAll(async () => {
  db = await createTestDatabase();
  gateway = await startTestGateway(
    db.url,
    testConfig({
      endpoints: {
        gh: { provider: 'github', secrets: [GITHUB_SECRET] },
        shop: { provider: 'shopify', secrets: [SHOPIFY_SECRET] },
        plain: {
          provider: 'hmac',
          secrets: [HMAC_SECRET],
          hmac: { header: 'X-Signature', eventIdHeader: 'X-Event-Id', eventTypeHeader: 'X-Event-Type' },
        },
        sw: { provider: 'standard-webhooks', secrets: [SW_SECRET] },
      },
    }),
  );
});

afterAll(async () => {
  await gateway?.stop();
  await db?.drop();
});

async function stored(endpoint: string) {
  const result = await db.pool.query(
    `SELECT event_id, event_type, entity_type, entity_id, entity_version::text AS version
       FROM hookgate.inbox WHERE endpoint = $1 ORDER BY received_at, event_id`,
    [endpoint],
  );
  return result.rows;
}

async function github(body: string, delivery: string, event: string) {
  return post(`${gateway.url}/webhooks/gh`, {
    body,
    headers: {
      'content-type': 'application/json',
      'x-hub-signature-256': await githubSign(GITHUB_SECRET, body),
      'x-github-delivery': delivery,
      'x-github-event': event,
    },
  });
}

function shopify(body: string, headers: Record<string, string>) {
  return post(`${gateway.url}/webhooks/shop`, {
    body,
    headers: {
      'content-type': 'application/json',
      'x-shopify-hmac-sha256': createHmac('sha256', SHOPIFY_SECRET).update(body).digest('base64'),
      ...headers,
    },
  });
}

describe('replays of a body-only signature under new headers', () => {
  it('github: the same body under a new delivery id and another event name is a duplicate', async () => {
    const body = JSON.stringify({ action: 'opened', issue: { id: 1, number: 7 } });
    const first = await github(body, 'd-original', 'issues');
    expect([first.status, first.json.status]).toEqual([200, 'accepted']);
    const replay = await github(body, 'd-forged', 'pull_request');
    expect([replay.status, replay.json.status]).toEqual([200, 'duplicate']);
    // A genuinely different event still gets through.
    const other = await github(
      JSON.stringify({ action: 'closed', issue: { id: 1, number: 7 } }),
      'd-2',
      'issues',
    );
    expect(other.json.status).toBe('accepted');
    expect((await stored('gh')).map((r) => [r.event_id, r.event_type])).toEqual([
      ['d-original', 'issues.opened'],
      ['d-2', 'issues.closed'],
    ]);
  });

  it('shopify: a replay with a new event id, year-9999 Triggered-At and another topic changes nothing', async () => {
    const body = JSON.stringify({
      id: 450789469,
      admin_graphql_api_id: 'gid://shopify/Order/450789469',
      updated_at: '2024-04-12T10:18:49Z',
    });
    const first = await shopify(body, {
      'x-shopify-topic': 'orders/updated',
      'x-shopify-event-id': 'e-original',
      'x-shopify-triggered-at': '2024-04-12T10:18:50Z',
    });
    expect(first.json.status).toBe('accepted');
    for (const topic of ['orders/updated', 'customers/update']) {
      const replay = await shopify(body, {
        'x-shopify-topic': topic,
        'x-shopify-event-id': `e-forged-${randomUUID()}`,
        'x-shopify-triggered-at': '9999-12-31T23:59:59Z',
      });
      expect([replay.status, replay.json.status]).toEqual([200, 'duplicate']);
    }
    // The next real update is newer than what is stored: nothing froze the entity.
    const next = JSON.stringify({
      id: 450789469,
      admin_graphql_api_id: 'gid://shopify/Order/450789469',
      updated_at: '2024-04-12T11:00:00Z',
    });
    expect(
      (await shopify(next, { 'x-shopify-topic': 'orders/updated', 'x-shopify-event-id': 'e-next' })).json
        .status,
    ).toBe('accepted');
    expect(await stored('shop')).toEqual([
      {
        event_id: 'e-original',
        event_type: 'orders/updated',
        entity_type: 'Order',
        entity_id: '450789469',
        version: '1712917129000000',
      },
      {
        event_id: 'e-next',
        event_type: 'orders/updated',
        entity_type: 'Order',
        entity_id: '450789469',
        version: '1712919600000000',
      },
    ]);
  });

  it('hmac with an id header: a replay under a new id is a duplicate, also when both arrive together', async () => {
    const body = JSON.stringify({ amount: 100, account: 'acc_1' });
    const signature = createHmac('sha256', HMAC_SECRET).update(body).digest('hex');
    const send = (id: string) =>
      post(`${gateway.url}/webhooks/plain`, {
        body,
        headers: {
          'content-type': 'application/json',
          'x-signature': signature,
          'x-event-id': id,
          'x-event-type': 'payment.created',
        },
      });
    const replies = await Promise.all(['h-1', 'h-2', 'h-3', 'h-4'].map(send));
    expect(replies.map((r) => r.status)).toEqual([200, 200, 200, 200]);
    expect(replies.filter((r) => r.json.status === 'accepted')).toHaveLength(1);
    expect(await stored('plain')).toHaveLength(1);
  });

  it('standard-webhooks signs its id: the same body under two ids is two events', async () => {
    const body = JSON.stringify({ type: 'thing.updated', data: { id: 'same' } });
    const a = standardWebhook(SW_SECRET, { body });
    const b = standardWebhook(SW_SECRET, { body });
    expect((await post(`${gateway.url}/webhooks/sw`, a)).json.status).toBe('accepted');
    expect((await post(`${gateway.url}/webhooks/sw`, b)).json.status).toBe('accepted');
    const digests = await db.pool.query(
      `SELECT count(*)::int AS n FROM hookgate.inbox_keys WHERE endpoint = 'sw' AND body_digest IS NOT NULL`,
    );
    expect(digests.rows[0].n).toBe(0);
  });

  it('the body digest is stored once, in the keys: the inbox row keeps none', async () => {
    const body = JSON.stringify({ action: 'closed', issue: { id: 9, number: 9 } });
    expect((await github(body, randomUUID(), 'issues')).json.status).toBe('accepted');
    const { rows } = await db.pool.query<{ kept: boolean; in_row: boolean }>(
      `SELECT k.body_digest IS NOT NULL AS kept, i.body_digest IS NOT NULL AS in_row
         FROM hookgate.inbox i JOIN hookgate.inbox_keys k USING (endpoint, event_id)
        WHERE i.endpoint = 'gh' AND i.payload = $1::jsonb`,
      [body],
    );
    expect(rows).toEqual([{ kept: true, in_row: false }]);
  });
});
