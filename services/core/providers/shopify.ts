import { anyMatch, decodeBase64, hmac } from './crypto.ts';
import { identifyEvent } from './extract.ts';
import { firstHeader, keepHeaders } from './headers.ts';
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

const KEPT_HEADERS = ['topic', 'shop-domain', 'api-version', 'triggered-at'].flatMap(names);

/** Shopify signs the body alone, with no timestamp: replay is bounded only by deduplication. */
export function createShopifyProvider(overrides?: ExtractOverrides): Provider {
  return {
    name: 'shopify',
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
        },
        eventType: { label: 'the X-Shopify-Topic header', read: () => shopifyHeader(headers, 'topic') },
        entityType: {
          label: 'the topic prefix',
          read: (eventType) => {
            const slash = eventType.indexOf('/');
            return slash > 0 ? eventType.slice(0, slash) : undefined;
          },
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
        version: {
          label: 'the body field /updated_at or the X-Shopify-Triggered-At header',
          read: () => evaluatePointer(body, '/updated_at') ?? shopifyHeader(headers, 'triggered-at'),
        },
        headers: keepHeaders(headers, KEPT_HEADERS),
      });
    },
  };
}
