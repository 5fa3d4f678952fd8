import { anyMatch, decodeHex, hmac } from './crypto.ts';
import { identifyEvent } from './extract.ts';
import { headerRules, headerValue } from './headers.ts';
import { evaluatePointer } from './json-pointer.ts';
import { reject } from './rejection.ts';
import { checkTolerance, parseUnixSeconds } from './timestamp.ts';
import type { ExtractOverrides, Provider, Rejection } from './types.ts';

const HEADER = 'stripe-signature';
// Everything Stripe says is in the signed body; its one header is the signature.
const RULES = headerRules({ secret: [HEADER] });

interface StripeHeader {
  readonly timestamp: string | undefined;
  readonly v1: readonly Buffer[];
}

/** `t=<unix>,v1=<hex>[,v1=<hex>…]`; other schemes (`v0`) are ignored as Stripe's SDK does. */
function parseHeader(value: string): StripeHeader | Rejection {
  let timestamp: string | undefined;
  const v1: Buffer[] = [];
  for (const item of value.split(',')) {
    const eq = item.indexOf('=');
    if (eq < 0) continue;
    // Not trimmed, as the provider's library splits it: `t=…, v1=…` names an entry ` v1`,
    // which is ignored there and here (docs/providers.md, "Strict parsing").
    const key = item.slice(0, eq);
    const text = item.slice(eq + 1);
    if (key === 't') {
      // Two timestamps would make it ambiguous which one was signed.
      if (timestamp !== undefined) {
        return reject('timestamp_invalid', 'The Stripe-Signature header carries more than one timestamp.');
      }
      timestamp = text;
    } else if (key === 'v1') {
      const bytes = decodeHex(text);
      if (bytes !== null) v1.push(bytes);
    }
  }
  return { timestamp, v1 };
}

export function createStripeProvider(overrides?: ExtractOverrides): Provider {
  return {
    name: 'stripe',
    headerRules: RULES,
    verify(request) {
      const value = headerValue(request.headers, HEADER);
      if (value === undefined)
        return reject('signature_missing', 'The request has no Stripe-Signature header.');
      const parsed = parseHeader(value);
      if ('ok' in parsed) return parsed;
      const timestamp = parseUnixSeconds(parsed.timestamp, 'timestamp (t=) of the Stripe-Signature header');
      if (!timestamp.ok) return timestamp;
      if (parsed.v1.length === 0) {
        return reject('signature_invalid', 'The Stripe-Signature header has no well-formed v1 signature.');
      }
      // The whsec_ secret is the key as text, prefix included; it is not base64-decoded.
      const expected = request.secrets.map((secret) =>
        hmac('sha256', secret, [`${parsed.timestamp}.`, request.rawBody]),
      );
      if (!anyMatch(parsed.v1, expected)) {
        return reject(
          'signature_invalid',
          'The Stripe-Signature header has no v1 signature that matches any configured secret.',
        );
      }
      return (
        checkTolerance(
          timestamp.seconds,
          request.nowMs,
          request.toleranceSeconds,
          'timestamp (t=) of the Stripe-Signature header',
        ) ?? { ok: true }
      );
    },
    identify({ body }) {
      return identifyEvent(body, overrides, {
        eventId: { label: 'the body field /id', read: () => evaluatePointer(body, '/id') },
        eventType: { label: 'the body field /type', read: () => evaluatePointer(body, '/type') },
        entityType: {
          label: 'the body field /data/object/object',
          read: () => evaluatePointer(body, '/data/object/object'),
        },
        entityId: {
          label: 'the body field /data/object/id',
          read: () => evaluatePointer(body, '/data/object/id'),
        },
        // No default version: `created` is whole seconds, so ordering by it would misorder events.
        headers: {},
      });
    },
  };
}
