import { createHmac } from 'node:crypto';
import type { DestinationConfig } from '../core/config/destinations-schema.ts';
import { standardWebhooksKey } from '../core/providers/standard-webhooks.ts';

// What the relay sends a destination: the headers (Standard Webhooks signing, the idempotency
// key, the static headers) and the body; and when a failed delivery is tried again.

/** `webhook-signature`: `v1,<base64 HMAC-SHA256 of "id.timestamp.body">` per secret, space-separated. */
export function standardWebhooksSignature(
  secrets: readonly string[],
  webhookId: string,
  timestampSeconds: number,
  body: string | Buffer,
): string {
  const prefix = `${webhookId}.${timestampSeconds}.`;
  return secrets
    .map((secret) => {
      // The config schema refused secrets that do not decode.
      const key = standardWebhooksKey(secret) as Buffer;
      return `v1,${createHmac('sha256', key).update(prefix).update(body).digest('base64')}`;
    })
    .join(' ');
}

/**
 * Header values the relay copies from an event (its id, its type) are the provider's text, and
 * an HTTP header value is not any text: fetch refuses CR, LF and other controls, and anything
 * above U+00FF. Such a value is sent percent-encoded
 * (its UTF-8 bytes, as `encodeURIComponent` writes them, so `decodeURIComponent` gives it back);
 * any other value is sent exactly as it is. `%` itself counts as needing the encoding, which keeps
 * the mapping one-to-one: an encoded value always holds a `%`, a value sent as it is never does,
 * so `a\nb` (sent `a%0Ab`) and a literal `a%0Ab` (sent `a%250Ab`) stay two keys.
 */
const AS_IT_IS = /^[\x21-\x24\x26-\x7e](?:[\x20-\x24\x26-\x7e]*[\x21-\x24\x26-\x7e])?$/;

export function headerValue(value: string): string {
  if (AS_IT_IS.test(value)) return value;
  let out = '';
  for (const byte of Buffer.from(value, 'utf8')) {
    out +=
      byte > 0x20 && byte < 0x7f && byte !== 0x25
        ? String.fromCharCode(byte)
        : `%${byte.toString(16).toUpperCase().padStart(2, '0')}`;
  }
  return out;
}

export interface DeliveryToSend {
  readonly endpoint: string;
  readonly destination: string;
  readonly eventId: string;
  readonly eventType: string;
  readonly webhookId: string;
  /** The stored payload, as PostgreSQL writes jsonb; with `body: raw`, the provider's original bytes. */
  readonly body: string | Buffer;
  /** With `body: raw`: the provider's headers kept with the bytes (lower-case names). */
  readonly keptHeaders?: Readonly<Record<string, string>> | null;
}

export function requestHeaders(
  settings: Pick<DestinationConfig, 'headers' | 'signing' | 'passthroughHeaders'>,
  delivery: DeliveryToSend,
  nowMs: number,
): Record<string, string> {
  const headers: Record<string, string> = { ...settings.headers };
  // Only those this destination names (the endpoint keeps the union of its raw destinations').
  for (const name of settings.passthroughHeaders ?? []) {
    const value = delivery.keptHeaders?.[name.toLowerCase()];
    if (value !== undefined) headers[name.toLowerCase()] = value;
  }
  Object.assign(headers, {
    'content-type': 'application/json',
    'user-agent': 'hookgate-relay',
    'idempotency-key': delivery.webhookId,
    'webhook-id': delivery.webhookId,
    'x-hookgate-endpoint': delivery.endpoint,
    'x-hookgate-destination': delivery.destination,
    'x-hookgate-event-id': headerValue(delivery.eventId),
    'x-hookgate-event-type': headerValue(delivery.eventType),
  });
  if (settings.signing) {
    // Signed per attempt: a receiver refuses timestamps too far from its clock.
    const timestamp = Math.floor(nowMs / 1000);
    headers['webhook-timestamp'] = String(timestamp);
    headers['webhook-signature'] = standardWebhooksSignature(
      settings.signing.secrets,
      delivery.webhookId,
      timestamp,
      delivery.body,
    );
  }
  return headers;
}

/**
 * What a broker's message carries beside the relay's headers: the event's entity (its type and
 * id, as the provider's text, encoded like the event's id), when it has one.
 */
export function busHeaders(entity: {
  readonly type: string | null;
  readonly id: string | null;
}): Record<string, string> {
  if (entity.type === null || entity.id === null) return {};
  return {
    'x-hookgate-entity-type': headerValue(entity.type),
    'x-hookgate-entity-id': headerValue(entity.id),
  };
}

/**
 * The wait before retry `n` (1 for the first): backoff doubled per retry, capped at `max`, less
 * a random share of up to `jitter`; at least what a 429/503 asked for (Retry-After), within `max`.
 */
export function retryDelayMs(
  retry: DestinationConfig['retry'],
  n: number,
  retryAfterSeconds: number | undefined,
  random: () => number = Math.random,
): number {
  const base = Math.min(retry.max, retry.backoff * 2 ** Math.min(n - 1, 40));
  const delay = base * (1 - retry.jitter * random());
  const asked = retryAfterSeconds === undefined ? 0 : Math.min(retry.max, retryAfterSeconds * 1000);
  return Math.max(delay, asked);
}
