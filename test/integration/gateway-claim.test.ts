import { createHmac } from 'node:crypto';
import Stripe from 'stripe';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { applyQueue } from '../../services/core/queue/names.ts';
import { createTestDatabase, type TestDatabase } from '../support/database.ts';
import { post, standardWebhook, stripeEvent } from '../support/deliveries.ts';
import {
  SHOPIFY_SECRET,
  STRIPE_SECRET,
  SW_OLD_SECRET,
  SW_SECRET,
  startTestGateway,
  type TestGateway,
} from '../support/gateway.ts';

let db: TestDatabase;
let gateway: TestGateway;

beforeAll(async () => {
  db = await createTestDatabase();
  gateway = await startTestGateway(db.url);
});

afterAll(async () => {
  await gateway?.stop();
  await db?.drop();
});

async function rows(eventId: string): Promise<number> {
  const result = await db.pool.query('SELECT count(*)::int AS n FROM hookgate.inbox WHERE event_id = $1', [
    eventId,
  ]);
  return result.rows[0].n;
}

async function jobs(endpoint: string, eventId: string): Promise<number> {
  const result = await db.pool.query(
    `SELECT count(*)::int AS n FROM pgboss.job WHERE name = $1 AND data->'eventIds' ? $2`,
    [applyQueue(endpoint), eventId],
  );
  return result.rows[0].n;
}

describe('claim', () => {
  it('stores a verified delivery with its job and answers 200 only after commit', async () => {
    const delivery = standardWebhook(SW_SECRET, { type: 'thing.created' });
    const reply = await post(`${gateway.url}/webhooks/alpha`, delivery);
    expect(reply.status).toBe(200);
    expect(reply.json).toMatchObject({ status: 'accepted', event_id: delivery.eventId });
    const row = await db.pool.query(
      'SELECT provider, event_type, status, payload, attempts FROM hookgate.inbox WHERE endpoint = $1 AND event_id = $2',
      ['alpha', delivery.eventId],
    );
    expect(row.rows).toEqual([
      {
        provider: 'standard-webhooks',
        event_type: 'thing.created',
        status: 'pending',
        payload: JSON.parse(delivery.body),
        attempts: 0,
      },
    ]);
    expect(await jobs('alpha', delivery.eventId)).toBe(1);
  });

  it('answers a sequential duplicate with the same 200 and changes nothing', async () => {
    const delivery = standardWebhook(SW_SECRET);
    const first = await post(`${gateway.url}/webhooks/alpha`, delivery);
    const second = await post(`${gateway.url}/webhooks/alpha`, delivery);
    expect([first.status, second.status]).toEqual([200, 200]);
    expect([first.json.status, second.json.status]).toEqual(['accepted', 'duplicate']);
    expect(await rows(delivery.eventId)).toBe(1);
    expect(await jobs('alpha', delivery.eventId)).toBe(1);
  });

  it('claims the same event sent on 8 connections at once exactly once', async () => {
    const delivery = standardWebhook(SW_SECRET);
    const replies = await Promise.all(
      Array.from({ length: 8 }, () => post(`${gateway.url}/webhooks/alpha`, delivery)),
    );
    expect(replies.map((r) => r.status)).toEqual(Array(8).fill(200));
    expect(replies.filter((r) => r.json.status === 'accepted')).toHaveLength(1);
    expect(await rows(delivery.eventId)).toBe(1);
    expect(await jobs('alpha', delivery.eventId)).toBe(1);
  });

  it('keys deduplication per endpoint: the same id on two endpoints is two events', async () => {
    const delivery = standardWebhook(SW_SECRET);
    expect((await post(`${gateway.url}/webhooks/alpha`, delivery)).json.status).toBe('accepted');
    expect((await post(`${gateway.url}/webhooks/beta`, delivery)).json.status).toBe('accepted');
    expect(await rows(delivery.eventId)).toBe(2);
    expect(await jobs('alpha', delivery.eventId)).toBe(1);
    expect(await jobs('beta', delivery.eventId)).toBe(1);
  });

  it('accepts a delivery signed with the previous secret (rotation)', async () => {
    const delivery = standardWebhook(SW_OLD_SECRET);
    expect((await post(`${gateway.url}/webhooks/alpha`, delivery)).status).toBe(200);
    expect(await rows(delivery.eventId)).toBe(1);
  });

  it('claims a Stripe event signed by the stripe SDK, keyed on the body id', async () => {
    const delivery = stripeEvent(STRIPE_SECRET, { type: 'invoice.paid' });
    const reply = await post(`${gateway.url}/webhooks/stripe`, delivery);
    expect(reply.status).toBe(200);
    const row = await db.pool.query(
      'SELECT event_type, entity_type, entity_id, entity_version FROM hookgate.inbox WHERE event_id = $1',
      [delivery.eventId],
    );
    expect(row.rows).toEqual([
      { event_type: 'invoice.paid', entity_type: 'invoice', entity_id: 'in_1', entity_version: null },
    ]);
  });

  it('keeps 18-digit Shopify ids exact (JSON numbers past 2^53 are not rounded)', async () => {
    const body =
      '{"id":820982911946154508,"admin_graphql_api_id":"gid://shopify/Order/820982911946154508","updated_at":"2024-04-12T10:18:49-04:00"}';
    const eventId = `shop-${Date.now()}`;
    const headers = {
      'content-type': 'application/json',
      'x-shopify-topic': 'orders/updated',
      'x-shopify-event-id': eventId,
      // Shopify's documented scheme, computed here independently of hookgate's verifier.
      'x-shopify-hmac-sha256': createHmac('sha256', SHOPIFY_SECRET).update(body).digest('base64'),
    };
    expect((await post(`${gateway.url}/webhooks/shop`, { body, headers })).status).toBe(200);
    const row = await db.pool.query(
      `SELECT entity_type, entity_id, entity_version::text AS v, payload->>'id' AS payload_id
       FROM hookgate.inbox WHERE event_id = $1`,
      [eventId],
    );
    expect(row.rows).toEqual([
      {
        entity_type: 'Order',
        entity_id: '820982911946154508',
        v: '1712931529000000',
        payload_id: '820982911946154508',
      },
    ]);
  });

  it('commits a burst of distinct events in shared transactions, each answered once', async () => {
    const deliveries = Array.from({ length: 60 }, () => standardWebhook(SW_SECRET));
    const replies = await Promise.all(deliveries.map((d) => post(`${gateway.url}/webhooks/beta`, d)));
    expect(replies.every((r) => r.status === 200 && r.json.status === 'accepted')).toBe(true);
    const ids = deliveries.map((d) => d.eventId);
    const stored = await db.pool.query(
      'SELECT count(*)::int AS n FROM hookgate.inbox WHERE event_id = ANY($1)',
      [ids],
    );
    expect(stored.rows[0].n).toBe(60);
    const text = await gateway.registry.getSingleMetricAsString('hookgate_claim_batch_size');
    const count = Number(/hookgate_claim_batch_size_count (\d+)/.exec(text)?.[1]);
    const sum = Number(/hookgate_claim_batch_size_sum (\d+)/.exec(text)?.[1]);
    // Group commit: fewer transactions than deliveries overall.
    expect(count).toBeLessThan(sum);
  });
});

describe('refusals leave no row', () => {
  const refused = async (
    endpoint: string,
    delivery: { body: string; headers: Record<string, string> },
    eventId: string,
  ) => {
    const reply = await post(`${gateway.url}/webhooks/${endpoint}`, delivery);
    expect(await rows(eventId)).toBe(0);
    expect(typeof reply.json.message).toBe('string');
    return reply;
  };

  it('refuses a wrong signature with 401', async () => {
    const delivery = standardWebhook('whsec_dGhpcyBpcyBub3QgdGhlIHJpZ2h0IHNlY3JldA==');
    const reply = await refused('alpha', delivery, delivery.eventId);
    expect([reply.status, reply.json.error]).toEqual([401, 'signature_invalid']);
  });

  it('refuses a tampered body', async () => {
    const delivery = standardWebhook(SW_SECRET);
    const reply = await refused(
      'alpha',
      { ...delivery, body: delivery.body.replace('thing', 'thinG') },
      delivery.eventId,
    );
    expect([reply.status, reply.json.error]).toEqual([401, 'signature_invalid']);
  });

  it('refuses old and future timestamps', async () => {
    for (const offset of [-600_000, 600_000]) {
      const delivery = standardWebhook(SW_SECRET, { at: new Date(Date.now() + offset) });
      const reply = await refused('alpha', delivery, delivery.eventId);
      expect([reply.status, reply.json.error]).toEqual([401, 'timestamp_out_of_tolerance']);
    }
  });

  it('refuses a body that is not JSON even when its signature is valid', async () => {
    const delivery = standardWebhook(SW_SECRET, { body: '{"type": "x", ' });
    const reply = await refused('alpha', delivery, delivery.eventId);
    expect([reply.status, reply.json.error]).toEqual([400, 'body_not_json']);
  });

  it('refuses an unknown endpoint with 404', async () => {
    const delivery = standardWebhook(SW_SECRET);
    const reply = await refused('nope', delivery, delivery.eventId);
    expect([reply.status, reply.json.error]).toEqual([404, 'endpoint_unknown']);
  });

  it('refuses a body over the limit with 413', async () => {
    const big = JSON.stringify({ type: 'x', pad: 'a'.repeat(1024 * 1024 + 10) });
    const delivery = standardWebhook(SW_SECRET, { body: big });
    const reply = await refused('alpha', delivery, delivery.eventId);
    expect([reply.status, reply.json.error]).toEqual([413, 'body_too_large']);
  });

  it('refuses a header block over the limit with 431 before anything is stored', async () => {
    const delivery = standardWebhook(SW_SECRET);
    const reply = await post(`${gateway.url}/webhooks/alpha`, {
      ...delivery,
      headers: { ...delivery.headers, 'x-padding': 'p'.repeat(20 * 1024) },
    });
    expect(reply.status).toBe(431);
    expect(await rows(delivery.eventId)).toBe(0);
  });

  it('refuses a Stripe event without an id after a valid signature', async () => {
    const delivery = stripeEvent(STRIPE_SECRET);
    const body = JSON.stringify({ object: 'event', type: 'invoice.created', data: { object: {} } });
    const { headers } = stripeEventWithBody(body);
    const reply = await refused('stripe', { body, headers }, delivery.eventId);
    expect([reply.status, reply.json.error]).toEqual([400, 'event_id_missing']);
  });

  it('counts refusals by code', async () => {
    const text = await gateway.registry.getSingleMetricAsString('hookgate_deliveries_total');
    expect(text).toMatch(/outcome="signature_invalid"} [1-9]/);
    expect(text).toMatch(/outcome="endpoint_unknown"} [1-9]/);
  });
});

function stripeEventWithBody(body: string) {
  const header = stripeEvent(STRIPE_SECRET);
  // Re-sign the custom body with the SDK helper.
  return {
    headers: {
      ...header.headers,
      'stripe-signature': stripeSign(body),
    },
  };
}

function stripeSign(body: string): string {
  return new Stripe('sk_test_hookgate').webhooks.generateTestHeaderString({
    payload: body,
    secret: STRIPE_SECRET,
  });
}
