import { createHmac, randomUUID } from 'node:crypto';
import type { EndpointConfig } from '../core/config/schema.ts';
import { HookgateError } from '../core/errors.ts';
import { TEST_EVENT_TYPE } from '../core/handlers/test-event.ts';

export interface SampleDelivery {
  readonly eventId: string;
  readonly body: string;
  readonly headers: Record<string, string>;
}

const hmac = (algorithm: string, key: string | Buffer, content: string) =>
  createHmac(algorithm, key).update(content);

/** Sets `value` at an RFC 6901 pointer, creating objects on the way. */
function setAtPointer(target: Record<string, unknown>, pointer: string, value: unknown): void {
  const keys = pointer
    .split('/')
    .slice(1)
    .map((key) => key.replaceAll('~1', '/').replaceAll('~0', '~'));
  let node: Record<string, unknown> = target;
  keys.forEach((key, index) => {
    if (index === keys.length - 1) node[key] = value;
    else {
      const next = node[key];
      if (next === null || typeof next !== 'object') node[key] = {};
      node = node[key] as Record<string, unknown>;
    }
  });
}

/**
 * A realistic sample event for the endpoint's provider, signed with the endpoint's first
 * secret exactly as that provider would sign it. Without `type` it is a test event
 * (`hookgate.test`), which every handler settles `ignored` without business writes.
 */
export function sampleDelivery(
  endpoint: EndpointConfig,
  type: string | undefined,
  nowMs: number,
): SampleDelivery {
  const secret = endpoint.secrets[0]!;
  const ts = Math.floor(nowMs / 1000);
  const iso = new Date(nowMs).toISOString();
  const suffix = randomUUID().replaceAll('-', '').slice(0, 20);
  const eventType = type ?? TEST_EVENT_TYPE;
  // An endpoint's `extract:` pointers read the signed body whatever the provider: the sample
  // carries its id and type where they point, so it arrives as what it claims to be.
  const shaped = (document: Record<string, unknown>, eventId: string): string => {
    if (endpoint.extract?.eventId) setAtPointer(document, endpoint.extract.eventId, eventId);
    if (endpoint.extract?.eventType) setAtPointer(document, endpoint.extract.eventType, eventType);
    return JSON.stringify(document);
  };
  switch (endpoint.provider) {
    case 'standard-webhooks':
    case 'svix': {
      const eventId = `msg_${suffix}`;
      const body = shaped({ type: eventType, timestamp: iso, data: { id: `obj_${suffix}` } }, eventId);
      const key = Buffer.from(secret.replace(/^whsec_/, ''), 'base64');
      const signature = hmac('sha256', key, `${eventId}.${ts}.${body}`).digest('base64');
      const prefix = endpoint.provider === 'svix' ? 'svix' : 'webhook';
      return {
        eventId,
        body,
        headers: {
          [`${prefix}-id`]: eventId,
          [`${prefix}-timestamp`]: String(ts),
          [`${prefix}-signature`]: `v1,${signature}`,
        },
      };
    }
    case 'stripe': {
      const eventId = `evt_test_${suffix}`;
      const body = shaped(
        {
          id: eventId,
          object: 'event',
          type: eventType,
          created: ts,
          livemode: false,
          data: { object: { id: `in_test_${suffix}`, object: 'invoice', status: 'open' } },
        },
        eventId,
      );
      const signature = hmac('sha256', secret, `${ts}.${body}`).digest('hex');
      return { eventId, body, headers: { 'stripe-signature': `t=${ts},v1=${signature}` } };
    }
    case 'github': {
      const eventId = randomUUID();
      const body = shaped({ zen: 'Keep it logically awesome.', hook_id: 1 }, eventId);
      const signature = hmac('sha256', secret, body).digest('hex');
      return {
        eventId,
        body,
        headers: {
          'x-github-delivery': eventId,
          'x-github-event': eventType,
          'x-hub-signature-256': `sha256=${signature}`,
        },
      };
    }
    case 'shopify': {
      const eventId = randomUUID();
      const body = shaped({ id: Number.parseInt(suffix.slice(0, 12), 16), updated_at: iso }, eventId);
      const signature = hmac('sha256', secret, body).digest('base64');
      return {
        eventId,
        body,
        headers: {
          'x-shopify-event-id': eventId,
          'x-shopify-webhook-id': randomUUID(),
          'x-shopify-topic': eventType,
          'x-shopify-triggered-at': iso,
          'x-shopify-hmac-sha256': signature,
        },
      };
    }
    case 'slack': {
      const eventId = `Ev${suffix.toUpperCase()}`;
      const body = shaped(
        {
          type: 'event_callback',
          event_id: eventId,
          event_time: ts,
          event: { type: eventType, text: 'hello from hookgate send-test' },
        },
        eventId,
      );
      const signature = hmac('sha256', secret, `v0:${ts}:${body}`).digest('hex');
      return {
        eventId,
        body,
        headers: { 'x-slack-request-timestamp': String(ts), 'x-slack-signature': `v0=${signature}` },
      };
    }
    case 'paddle': {
      const eventId = `evt_${suffix}`;
      const body = shaped(
        {
          event_id: eventId,
          event_type: eventType,
          occurred_at: iso,
          data: { id: `txn_${suffix}`, updated_at: iso },
        },
        eventId,
      );
      const signature = hmac('sha256', secret, `${ts}:${body}`).digest('hex');
      return { eventId, body, headers: { 'paddle-signature': `ts=${ts};h1=${signature}` } };
    }
    case 'hmac': {
      const options = endpoint.hmac!;
      const eventId = `evt_${suffix}`;
      const body = shaped({ type: eventType, data: { id: `obj_${suffix}` } }, eventId);
      const signature = hmac(options.algorithm, secret, body).digest(options.encoding);
      const headers: Record<string, string> = {
        [options.header.toLowerCase()]: `${options.prefix}${signature}`,
      };
      if (options.eventIdHeader) headers[options.eventIdHeader.toLowerCase()] = eventId;
      if (options.eventTypeHeader) headers[options.eventTypeHeader.toLowerCase()] = eventType;
      return { eventId, body, headers };
    }
    default:
      // The presets and the scheme provider: their keys are often public keys, and their
      // schemes many; a test delivery is sent by the provider's own dashboard.
      throw new HookgateError(
        'usage_invalid',
        `send-test signs for standard-webhooks, svix, stripe, github, shopify, slack, paddle and hmac endpoints; for ${endpoint.provider}, send a test delivery from the provider's dashboard.`,
      );
  }
}
