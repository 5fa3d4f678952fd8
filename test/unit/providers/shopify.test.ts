import { createHmac } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { createProvider } from '../../../services/core/providers/index.ts';
import { identify, request, reserialised, tampered, verdictOf } from './fixtures.ts';

const SECRET = 'shpss_current';
const OLD_SECRET = 'shpss_previous';
const BODY = JSON.stringify({
  id: 5461508341832,
  admin_graphql_api_id: 'gid://shopify/Order/5461508341832',
  updated_at: '2024-04-12T06:18:49-04:00',
  total_price: '42.00',
});

const provider = createProvider({ provider: 'shopify' });

/** Shopify's documented formula, computed independently of the code under test. */
function hmacHeader(body: string, secret = SECRET): string {
  return createHmac('sha256', secret).update(body, 'utf8').digest('base64');
}

function headers(body: string, secret = SECRET): Record<string, string> {
  return {
    'X-Shopify-Hmac-Sha256': hmacHeader(body, secret),
    'X-Shopify-Topic': 'orders/updated',
    'X-Shopify-Shop-Domain': 'example.myshopify.com',
    'X-Shopify-API-Version': '2024-04',
    'X-Shopify-Webhook-Id': 'b54557e4-bdd9-4b37-8a5f-bf7d70bcd043',
    'X-Shopify-Event-Id': '98880550-7158-44d4-b7cd-2c97c8a091b5',
    'X-Shopify-Triggered-At': '2024-04-12T10:18:49.621022Z',
  };
}

describe('shopify verify', () => {
  it('accepts the documented base64 HMAC of the body', () => {
    expect(verdictOf(provider, request(BODY, headers(BODY), [SECRET]))).toBe('ok');
  });

  it('accepts the unprefixed Shopify-Hmac-Sha256 name', () => {
    expect(verdictOf(provider, request(BODY, { 'Shopify-Hmac-Sha256': hmacHeader(BODY) }, [SECRET]))).toBe(
      'ok',
    );
  });

  it('refuses a tampered body', () => {
    expect(verdictOf(provider, request(tampered(BODY), headers(BODY), [SECRET]))).toBe('signature_invalid');
  });

  it('refuses the same JSON re-serialised with other whitespace', () => {
    expect(verdictOf(provider, request(reserialised(BODY), headers(BODY), [SECRET]))).toBe(
      'signature_invalid',
    );
  });

  it('refuses a signature made with another secret', () => {
    expect(verdictOf(provider, request(BODY, headers(BODY, 'nope'), [SECRET]))).toBe('signature_invalid');
  });

  it('reports a missing signature header', () => {
    expect(verdictOf(provider, request(BODY, { 'X-Shopify-Topic': 'orders/updated' }, [SECRET]))).toBe(
      'signature_missing',
    );
  });

  it('refuses malformed base64, including the hex form of the right digest', () => {
    const digest = createHmac('sha256', SECRET).update(BODY).digest();
    for (const value of [digest.toString('hex'), hmacHeader(BODY).replace('=', ''), `${hmacHeader(BODY)}!`]) {
      expect(verdictOf(provider, request(BODY, { 'X-Shopify-Hmac-Sha256': value }, [SECRET]))).toBe(
        'signature_invalid',
      );
    }
  });

  it('accepts a delivery signed with a previous secret among several configured', () => {
    expect(verdictOf(provider, request(BODY, headers(BODY, OLD_SECRET), [SECRET, OLD_SECRET]))).toBe('ok');
  });
});

describe('shopify identify', () => {
  it('takes the event id and topic from headers, entity and version only from the signed body', () => {
    expect(identify(provider, request(BODY, headers(BODY), [SECRET]))).toEqual({
      ok: true,
      event: {
        eventId: '98880550-7158-44d4-b7cd-2c97c8a091b5',
        eventType: 'orders/updated',
        entityType: 'Order',
        entityId: '5461508341832',
        entityVersion: '1712917129000000',
        headers: {
          'x-shopify-topic': 'orders/updated',
          'x-shopify-shop-domain': 'example.myshopify.com',
          'x-shopify-api-version': '2024-04',
          'x-shopify-triggered-at': '2024-04-12T10:18:49.621022Z',
        },
        idUnsigned: true,
      },
    });
  });

  it('falls back to the webhook id; never takes a version from the unsigned X-Shopify-Triggered-At', () => {
    const body = JSON.stringify({ id: 1, admin_graphql_api_id: 'gid://shopify/Order/1' });
    const { 'X-Shopify-Event-Id': _event, ...h } = headers(body);
    // A captured body replayed with a year-9999 header must not freeze the entity.
    const replayed = { ...h, 'X-Shopify-Triggered-At': '9999-12-31T23:59:59Z' };
    expect(identify(provider, request(body, replayed, [SECRET]))).toMatchObject({
      ok: true,
      event: {
        eventId: 'b54557e4-bdd9-4b37-8a5f-bf7d70bcd043',
        entityType: 'Order',
        entityId: '1',
        entityVersion: null,
      },
    });
  });

  it('never takes the entity type from the unsigned topic', () => {
    // An order's body sent under a customer topic is still an Order.
    const asCustomer = { ...headers(BODY), 'X-Shopify-Topic': 'customers/update' };
    expect(identify(provider, request(BODY, asCustomer, [SECRET]))).toMatchObject({
      ok: true,
      event: { eventType: 'customers/update', entityType: 'Order', entityId: '5461508341832' },
    });
    // Without a GraphQL id in the body there is no entity at all.
    const bare = JSON.stringify({ id: 7, updated_at: '2024-04-12T10:18:49Z' });
    expect(identify(provider, request(bare, headers(bare), [SECRET]))).toMatchObject({
      ok: true,
      event: { entityType: null, entityId: null, entityVersion: null },
    });
  });

  it('reads the unprefixed Shopify-* header names', () => {
    const body = JSON.stringify({
      id: 9,
      admin_graphql_api_id: 'gid://shopify/Product/9',
      updated_at: '2024-04-12T10:18:49Z',
    });
    const h = {
      'Shopify-Hmac-Sha256': hmacHeader(body),
      'Shopify-Topic': 'products/update',
      'Shopify-Event-Id': 'evt-unprefixed',
      'Shopify-Shop-Domain': 'example.myshopify.com',
    };
    expect(identify(provider, request(body, h, [SECRET]))).toEqual({
      ok: true,
      event: {
        eventId: 'evt-unprefixed',
        eventType: 'products/update',
        entityType: 'Product',
        entityId: '9',
        entityVersion: '1712917129000000',
        headers: { 'shopify-topic': 'products/update', 'shopify-shop-domain': 'example.myshopify.com' },
        idUnsigned: true,
      },
    });
  });

  it('uses the GraphQL id when the numeric id is too large for JSON.parse to keep exact', () => {
    const body =
      '{"id":788032119674292922,"admin_graphql_api_id":"gid://shopify/Product/788032119674292922"}';
    expect(identify(provider, request(body, headers(body), [SECRET]))).toMatchObject({
      ok: true,
      event: { entityId: 'gid://shopify/Product/788032119674292922' },
    });
  });

  it('refuses a delivery without event or webhook id, or without topic', () => {
    const { 'X-Shopify-Event-Id': _e, 'X-Shopify-Webhook-Id': _w, ...noId } = headers(BODY);
    const { 'X-Shopify-Topic': _t, ...noTopic } = headers(BODY);
    expect(identify(provider, request(BODY, noId, [SECRET]))).toMatchObject({ code: 'event_id_missing' });
    expect(identify(provider, request(BODY, noTopic, [SECRET]))).toMatchObject({
      code: 'event_type_missing',
    });
  });

  it('refuses an unreadable updated_at', () => {
    const body = JSON.stringify({
      id: 1,
      admin_graphql_api_id: 'gid://shopify/Order/1',
      updated_at: 'last tuesday',
    });
    expect(identify(provider, request(body, headers(body), [SECRET]))).toMatchObject({
      code: 'version_invalid',
    });
  });

  it('lets overrides replace the entity and version sources', () => {
    const withOverrides = createProvider({
      provider: 'shopify',
      extract: { entityType: '/kind', entityId: '/order_id', version: '/seq' },
    });
    const body = JSON.stringify({ kind: 'refund', order_id: 77, seq: '12' });
    expect(identify(withOverrides, request(body, headers(body), [SECRET]))).toMatchObject({
      ok: true,
      event: { entityType: 'refund', entityId: '77', entityVersion: '12' },
    });
  });
});
