import { anyMatch, decodeBase64, hmac } from './crypto.ts';
import { identifyEvent } from './extract.ts';
import { eventHeaders, firstHeader, headerRules } from './headers.ts';
import { evaluatePointer } from './json-pointer.ts';
import { reject } from './rejection.ts';
import type { ExtractOverrides, HeaderBag, Provider } from './types.ts';

/** Shopify is moving from `X-Shopify-*` to unprefixed `Shopify-*` names; accept both. */
function names(suffix: string): readonly [string, string] {
  return [`x-shopify-${suffix}`, `shopify-${suffix}`];
}

function shopifyHeader(headers: HeaderBag, suffix: string): string | undefined {
  return firstHeader(headers, names(suffix));
}

const GID = /^gid:\/\/shopify\/([A-Za-z][A-Za-z0-9]*)\/[^/]+$/;

/** `gid://shopify/Order/450789469` → `Order`. */
function gidType(value: unknown): string | undefined {
  if (typeof value !== 'string') return undefined;
  return GID.exec(value)?.[1];
}

const RULES = headerRules({
  identity: ['event-id', 'webhook-id', 'topic'].flatMap(names),
  delivery: ['topic', 'shop-domain', 'api-version', 'triggered-at'].flatMap(names),
  secret: names('hmac-sha256'),
});

/**
 * Shopify signs the body alone, with no timestamp: replay is bounded only by deduplication, on
 * the event id and (since that header is unsigned) on the body's digest.
 */
export function createShopifyProvider(overrides?: ExtractOverrides): Provider {
  return {
    name: 'shopify',
    headerRules: RULES,
    verify(request) {
      const value = shopifyHeader(request.headers, 'hmac-sha256');
      if (value === undefined)
        return reject('signature_missing', 'The request has no X-Shopify-Hmac-Sha256 header.');
      const signature = decodeBase64(value);
      if (signature === null) {
        return reject('signature_invalid', 'The X-Shopify-Hmac-Sha256 header is not valid base64.');
      }
      const expected = request.secrets.map((secret) => hmac('sha256', secret, [request.rawBody]));
      if (!anyMatch([signature], expected)) {
        return reject(
          'signature_invalid',
          'The X-Shopify-Hmac-Sha256 header does not match any configured secret.',
        );
      }
      return { ok: true };
    },
    identify({ headers, body }) {
      return identifyEvent(body, overrides, {
        // The event id is shared by every webhook one event fans out to, so it dedupes better.
        eventId: {
          label: 'the X-Shopify-Event-Id or X-Shopify-Webhook-Id header',
          read: () => shopifyHeader(headers, 'event-id') ?? shopifyHeader(headers, 'webhook-id'),
          unsigned: true,
        },
        // The topic is unsigned: it names the event type (for routing and reading) but never the
        // entity, which comes from the signed body's GraphQL id.
        eventType: { label: 'the X-Shopify-Topic header', read: () => shopifyHeader(headers, 'topic') },
        entityType: {
          label: 'the type in the body field /admin_graphql_api_id',
          read: () => gidType(evaluatePointer(body, '/admin_graphql_api_id')),
        },
        entityId: {
          label: 'the body field /id or /admin_graphql_api_id',
          read: () => {
            const id = evaluatePointer(body, '/id');
            // Ids beyond 2^53 were rounded by JSON.parse; the GraphQL id is a string and exact.
            return typeof id === 'string' || Number.isSafeInteger(id)
              ? id
              : evaluatePointer(body, '/admin_graphql_api_id');
          },
        },
        // Only the signed body may order events: X-Shopify-Triggered-At is unsigned, and a
        // replay with a far-future value would freeze the entity.
        version: { label: 'the body field /updated_at', read: () => evaluatePointer(body, '/updated_at') },
        headers: eventHeaders(headers, RULES),
      });
    },
  };
}
