import { randomUUID } from 'node:crypto';
import { request as httpRequest } from 'node:http';
import { Webhook } from 'standardwebhooks';
import Stripe from 'stripe';

export interface Delivery {
  readonly eventId: string;
  readonly body: string;
  readonly headers: Record<string, string>;
}

/** Signed by the `standardwebhooks` SDK, not by hookgate's code. */
export function standardWebhook(
  secret: string,
  options: { eventId?: string; type?: string; data?: unknown; at?: Date; body?: string } = {},
): Delivery {
  const eventId = options.eventId ?? `msg_${randomUUID()}`;
  const at = options.at ?? new Date();
  const body =
    options.body ??
    JSON.stringify({ type: options.type ?? 'thing.updated', data: options.data ?? { id: 'thing_1' } });
  const signature = new Webhook(secret).sign(eventId, at, body);
  return {
    eventId,
    body,
    headers: {
      'content-type': 'application/json',
      'webhook-id': eventId,
      'webhook-timestamp': String(Math.floor(at.getTime() / 1000)),
      'webhook-signature': signature,
    },
  };
}

const stripe = new Stripe('sk_test_hookgate');

/** Signed by the `stripe` SDK's own test helper. */
export function stripeEvent(
  secret: string,
  options: { eventId?: string; type?: string; object?: unknown } = {},
): Delivery {
  const eventId = options.eventId ?? `evt_${randomUUID().replaceAll('-', '')}`;
  const body = JSON.stringify({
    id: eventId,
    object: 'event',
    type: options.type ?? 'invoice.created',
    created: Math.floor(Date.now() / 1000),
    data: { object: options.object ?? { id: 'in_1', object: 'invoice' } },
  });
  const header = stripe.webhooks.generateTestHeaderString({ payload: body, secret });
  return { eventId, body, headers: { 'content-type': 'application/json', 'stripe-signature': header } };
}

export interface Reply {
  readonly status: number;
  readonly headers: Record<string, string | string[] | undefined>;
  readonly json: Record<string, unknown>;
}

/**
 * POSTs on a fresh TCP connection (no agent): concurrent calls really are concurrent
 * connections, as a provider's retries would be.
 */
export function post(
  url: string,
  delivery: { body: string | Buffer; headers: Record<string, string> },
  /** `localAddress`: the client end's address, e.g. 127.0.0.2 to come from another loopback source. */
  options: { localAddress?: string } = {},
): Promise<Reply> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(
      url,
      { method: 'POST', headers: delivery.headers, agent: false, ...options },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (chunk: Buffer) => chunks.push(chunk));
        res.on('end', () => {
          const text = Buffer.concat(chunks).toString('utf8');
          let json: Record<string, unknown> = {};
          try {
            json = JSON.parse(text) as Record<string, unknown>;
          } catch {
            json = { raw: text };
          }
          resolve({ status: res.statusCode ?? 0, headers: res.headers, json });
        });
      },
    );
    req.on('error', reject);
    req.end(delivery.body);
  });
}
