import { anyMatch, decodeHex, hmac } from './crypto.ts';
import { identifyEvent } from './extract.ts';
import { headerRules, headerValue } from './headers.ts';
import { evaluatePointer } from './json-pointer.ts';
import { reject } from './rejection.ts';
import { checkTolerance, parseUnixSeconds } from './timestamp.ts';
import type { ExtractOverrides, Provider, Rejection } from './types.ts';

// Everything Paddle says is in the signed body; its one header is the signature.
const RULES = headerRules({ secret: ['paddle-signature'] });

const TIMESTAMP_SOURCE = 'timestamp (ts=) of the Paddle-Signature header';

interface PaddleHeader {
  readonly timestamp: string | undefined;
  readonly h1: readonly Buffer[];
}

/** `ts=<unix>;h1=<hex>[;h1=<hex>…]`; unknown keys are ignored for forward compatibility. */
function parseHeader(value: string): PaddleHeader | Rejection {
  let timestamp: string | undefined;
  const h1: Buffer[] = [];
  for (const item of value.split(';')) {
    const eq = item.indexOf('=');
    if (eq < 0) continue;
    // Not trimmed, as the provider's library splits it: `t=…, v1=…` names an entry ` v1`,
    // which is ignored there and here (docs/providers.md, "Strict parsing").
    const key = item.slice(0, eq);
    const text = item.slice(eq + 1);
    if (key === 'ts') {
      if (timestamp !== undefined) {
        return reject('timestamp_invalid', 'The Paddle-Signature header carries more than one timestamp.');
      }
      timestamp = text;
    } else if (key === 'h1') {
      const bytes = decodeHex(text);
      if (bytes !== null) h1.push(bytes);
    }
  }
  return { timestamp, h1 };
}

export function createPaddleProvider(overrides?: ExtractOverrides): Provider {
  return {
    name: 'paddle',
    headerRules: RULES,
    verify(request) {
      const value = headerValue(request.headers, 'paddle-signature');
      if (value === undefined)
        return reject('signature_missing', 'The request has no Paddle-Signature header.');
      const parsed = parseHeader(value);
      if ('ok' in parsed) return parsed;
      const timestamp = parseUnixSeconds(parsed.timestamp, TIMESTAMP_SOURCE);
      if (!timestamp.ok) return timestamp;
      if (parsed.h1.length === 0) {
        return reject('signature_invalid', 'The Paddle-Signature header has no well-formed h1 signature.');
      }
      // Any h1 may match (Paddle sends several during secret rotation), not just the last one.
      const expected = request.secrets.map((secret) =>
        hmac('sha256', secret, [`${parsed.timestamp}:`, request.rawBody]),
      );
      if (!anyMatch(parsed.h1, expected)) {
        return reject(
          'signature_invalid',
          'The Paddle-Signature header has no h1 signature that matches any configured secret.',
        );
      }
      return (
        checkTolerance(timestamp.seconds, request.nowMs, request.toleranceSeconds, TIMESTAMP_SOURCE) ?? {
          ok: true,
        }
      );
    },
    identify({ body }) {
      return identifyEvent(body, overrides, {
        eventId: { label: 'the body field /event_id', read: () => evaluatePointer(body, '/event_id') },
        eventType: { label: 'the body field /event_type', read: () => evaluatePointer(body, '/event_type') },
        entityType: {
          label: 'the event type prefix',
          read: (eventType) => {
            const dot = eventType.indexOf('.');
            return dot > 0 ? eventType.slice(0, dot) : undefined;
          },
        },
        entityId: { label: 'the body field /data/id', read: () => evaluatePointer(body, '/data/id') },
        version: {
          label: 'the body field /data/updated_at or /occurred_at',
          read: () => evaluatePointer(body, '/data/updated_at') ?? evaluatePointer(body, '/occurred_at'),
        },
        headers: {},
      });
    },
  };
}
