import { createHmac } from 'node:crypto';
import type { DestinationConfig } from '../core/config/destinations-schema.ts';
import { standardWebhooksKey } from '../core/providers/standard-webhooks.ts';
import { headerValue } from './relay-headers.ts';

// What the relay sends a destination: the headers (Standard Webhooks signing, the idempotency
// key, the static headers) and the body; and when a failed delivery is tried again.

/** `webhook-signature`: `v1,<base64 HMAC-SHA256 of "id.timestamp.body">` per secret, space-separated. */
export function standardWebhooksSignature(
  secrets: readonly string[],
  webhookId: string,
  timestampSeconds: number,
  body: string,
): string {
  const content = `${webhookId}.${timestampSeconds}.${body}`;
  return secrets
    .map((secret) => {
      // The config schema refused secrets that do not decode.
      const key = standardWebhooksKey(secret) as Buffer;
      return `v1,${createHmac('sha256', key).update(content).digest('base64')}`;
    })
    .join(' ');
}

export interface DeliveryToSend {
  readonly endpoint: string;
  readonly destination: string;
  readonly eventId: string;
  readonly eventType: string;
  readonly webhookId: string;
  /** The stored payload, as PostgreSQL writes jsonb. */
  readonly body: string;
}

export function requestHeaders(
  settings: Pick<DestinationConfig, 'headers' | 'signing'>,
  delivery: DeliveryToSend,
  nowMs: number,
): Record<string, string> {
  const headers: Record<string, string> = { ...settings.headers };
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
