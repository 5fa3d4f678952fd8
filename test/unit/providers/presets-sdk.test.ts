import { createHmac, generateKeyPairSync, type KeyObject, sign } from 'node:crypto';
import { verifyWebhook } from '@clerk/backend/webhooks';
import { Signature as HubspotSignature } from '@hubspot/api-client';
import { LinearWebhookClient } from '@linear/sdk/webhooks';
import { EventWebhook } from '@sendgrid/eventwebhook';
import { WorkOS } from '@workos-inc/node';
import { WebhooksManager } from 'box-node-sdk/lib/managers/webhooks';
import coinbase from 'coinbase-commerce-node';
import { verifyKey } from 'discord-interactions';
import Razorpay from 'razorpay';
import { Resend } from 'resend';
import { WebhooksHelper } from 'square';
import { Webhook as SvixWebhook } from 'svix';
import twilio from 'twilio';
import { expect, it } from 'vitest';
import { createProvider } from '../../../services/core/providers/index.ts';
import { NOW_MS, NOW_S } from './fixtures.ts';
import { atTestClock, type Headers, prove, verifyRequest, type Which } from './preset-proof.ts';

// Each preset here is proven by the provider's own library: it signs the delivery where it can,
// and otherwise (public-key schemes, whose libraries only verify) it verifies the very bytes and
// headers hookgate is given; hookgate and the library must agree on the authentic delivery and
// on its tampered copy.

const pick = <T>(which: Which, values: Readonly<Record<Which, T>>): T => values[which];

// ------------------------------------------------------------------ twilio
{
  const secrets = { good: 'twilio-auth-token-good', other: 'twilio-auth-token-other' };
  const url = 'https://hooks.example.com/webhooks/twilio?tenant=7';
  const body =
    'AccountSid=AC123&ApiVersion=2010-04-01&From=%2B15005550006&MessageSid=SM123&MessageStatus=delivered&To=%2B15005550009';
  const params = Object.fromEntries(new URLSearchParams(body));
  prove('twilio (the twilio library signs and validates)', {
    provider: 'twilio',
    url,
    secrets,
    body,
    sign: (_body, which) => ({
      'X-Twilio-Signature': twilio.getExpectedTwilioSignature(pick(which, secrets), url, params),
      'I-Twilio-Idempotency-Token': 'idem-1',
      'Content-Type': 'application/x-www-form-urlencoded',
    }),
    oracle: (text, headers) =>
      twilio.validateRequest(
        secrets.good,
        headers['X-Twilio-Signature'] ?? '',
        url,
        Object.fromEntries(new URLSearchParams(text)),
      ),
    identity: { eventId: 'idem-1', eventType: 'delivered', idUnsigned: true },
  });

  it("twilio: the published example of Twilio's security docs verifies (auth token 12345)", () => {
    // https://www.twilio.com/docs/usage/security#validating-requests
    const provider = createProvider({
      provider: 'twilio',
      url: 'https://mycompany.com/myapp.php?foo=1&bar=2',
    });
    const example =
      'CallSid=CA1234567890ABCDE&Caller=%2B12349013030&Digits=1234&From=%2B12349013030&To=%2B18005551212';
    const request = verifyRequest(example, { 'x-twilio-signature': '0/KCTR6DLpKmkAf8muzZqo1nDgQ=' }, [
      '12345',
    ]);
    expect(provider.verify(request)).toEqual({ ok: true });
  });

  it('twilio: the form is stored as JSON, repeated names as arrays, __proto__ as a plain parameter', () => {
    const provider = createProvider({ provider: 'twilio', url });
    const document = provider.decodeBody?.('A=1&B=2&A=3&__proto__=x&To=%2B1') as Record<string, unknown>;
    expect(JSON.stringify(document)).toBe('{"A":["1","3"],"B":"2","__proto__":"x","To":"+1"}');
    expect(Object.getPrototypeOf(document)).toBe(Object.prototype);
  });

  it('twilio: the URL with the default port spelled out verifies too, as the library accepts it', () => {
    const provider = createProvider({
      provider: 'twilio',
      url: 'https://hooks.example.com:443/webhooks/twilio?tenant=7',
    });
    const headers = { 'x-twilio-signature': twilio.getExpectedTwilioSignature(secrets.good, url, params) };
    expect(provider.verify(verifyRequest(body, headers, [secrets.good]))).toEqual({ ok: true });
  });
}

// ------------------------------------------------------------------ sendgrid (ECDSA P-256)
{
  const good = generateKeyPairSync('ec', { namedCurve: 'prime256v1' });
  const other = generateKeyPairSync('ec', { namedCurve: 'prime256v1' });
  const der = (key: KeyObject) => key.export({ type: 'spki', format: 'der' }).toString('base64');
  const privates: Record<Which, KeyObject> = { good: good.privateKey, other: other.privateKey };
  const body = JSON.stringify([
    {
      email: 'a@example.com',
      timestamp: NOW_S,
      event: 'delivered',
      sg_event_id: 'sg_1',
      sg_message_id: 'm1',
    },
  ]);
  prove('sendgrid (@sendgrid/eventwebhook verifies the same bytes)', {
    provider: 'sendgrid',
    secrets: { good: der(good.publicKey), other: der(other.publicKey) },
    body,
    timestamp: 'seconds',
    sign: (text, which, timestampS) => ({
      'X-Twilio-Email-Event-Webhook-Timestamp': String(timestampS),
      'X-Twilio-Email-Event-Webhook-Signature': sign(
        'sha256',
        Buffer.from(`${timestampS}${text}`),
        privates[which],
      ).toString('base64'),
    }),
    oracle: (text, headers) => {
      const webhook = new EventWebhook();
      return webhook.verifySignature(
        webhook.convertPublicKeyToECDSA(der(good.publicKey)),
        text,
        headers['X-Twilio-Email-Event-Webhook-Signature'] ?? '',
        headers['X-Twilio-Email-Event-Webhook-Timestamp'] ?? '',
      );
    },
    identity: {
      eventId: expect.stringMatching(/^sha256:[0-9a-f]{64}$/),
      eventType: 'events',
      idUnsigned: false,
    },
  });
}

// ------------------------------------------------------------------ discord (Ed25519)
{
  const good = generateKeyPairSync('ed25519');
  const other = generateKeyPairSync('ed25519');
  const hex = (key: KeyObject) => key.export({ type: 'spki', format: 'der' }).subarray(12).toString('hex');
  const privates: Record<Which, KeyObject> = { good: good.privateKey, other: other.privateKey };
  const body = JSON.stringify({
    version: 1,
    application_id: '1234567890',
    type: 1,
    event: {
      type: 'APPLICATION_AUTHORIZED',
      timestamp: '2024-10-18T14:42:53.064834',
      data: { user: { id: '42' } },
    },
  });
  prove('discord (discord-interactions verifies the same bytes)', {
    provider: 'discord',
    secrets: { good: hex(good.publicKey), other: hex(other.publicKey) },
    body,
    timestamp: 'seconds',
    sign: (text, which, timestampS) => ({
      'X-Signature-Timestamp': String(timestampS),
      'X-Signature-Ed25519': sign(null, Buffer.from(`${timestampS}${text}`), privates[which]).toString('hex'),
    }),
    oracle: (text, headers) =>
      verifyKey(
        text,
        headers['X-Signature-Ed25519'] ?? '',
        headers['X-Signature-Timestamp'] ?? '',
        hex(good.publicKey),
      ),
    identity: { eventId: expect.stringMatching(/^sha256:/), eventType: 'APPLICATION_AUTHORIZED' },
  });
}

// ------------------------------------------------------------------ square
{
  const secrets = { good: 'square-signature-key-good', other: 'square-signature-key-other' };
  const url = 'https://hooks.example.com/webhooks/square';
  const body = JSON.stringify({
    merchant_id: 'M1',
    type: 'payment.updated',
    event_id: 'c3ae7d11-0ba2-4c7b-8f1c-6f3f4f1b2a10',
    created_at: '2024-04-12T10:18:49Z',
    data: { type: 'payment', id: 'PAY_1', object: { payment: { id: 'PAY_1', version: 3 } } },
  });
  prove('square (WebhooksHelper of the square library verifies)', {
    provider: 'square',
    url,
    secrets,
    body,
    sign: (text, which) => ({
      'x-square-hmacsha256-signature': createHmac('sha256', pick(which, secrets))
        .update(url + text)
        .digest('base64'),
    }),
    oracle: (text, headers) =>
      WebhooksHelper.verifySignature({
        requestBody: text,
        signatureHeader: headers['x-square-hmacsha256-signature'] ?? '',
        signatureKey: secrets.good,
        notificationUrl: url,
      }),
    identity: {
      eventId: 'c3ae7d11-0ba2-4c7b-8f1c-6f3f4f1b2a10',
      eventType: 'payment.updated',
      entityType: 'payment',
      entityId: 'PAY_1',
    },
  });
}

// ------------------------------------------------------------------ hubspot v3
{
  const secrets = { good: 'hubspot-client-secret-good', other: 'hubspot-client-secret-other' };
  const url = 'https://hooks.example.com/webhooks/hubspot';
  const body = JSON.stringify([
    {
      eventId: 100,
      subscriptionId: 7,
      portalId: 99,
      occurredAt: 1_700_000_000_000,
      subscriptionType: 'contact.creation',
      objectId: 123,
    },
  ]);
  prove('hubspot (Signature.getSignature/isValid of @hubspot/api-client)', {
    provider: 'hubspot',
    url,
    secrets,
    body,
    timestamp: 'milliseconds',
    sign: (text, which, timestampS) => {
      const timestamp = Math.round(timestampS * 1000);
      return {
        'X-HubSpot-Request-Timestamp': String(timestamp),
        'X-HubSpot-Signature-v3': HubspotSignature.getSignature('POST', 'v3', {
          signature: '',
          clientSecret: pick(which, secrets),
          requestBody: text,
          url,
          timestamp,
        }),
      };
    },
    oracle: (text, headers) =>
      HubspotSignature.isValid({
        signatureVersion: 'v3',
        method: 'POST',
        signature: headers['X-HubSpot-Signature-v3'] ?? '',
        clientSecret: secrets.good,
        requestBody: text,
        url,
        timestamp: Number(headers['X-HubSpot-Request-Timestamp']),
      }),
    identity: { eventId: expect.stringMatching(/^sha256:/), eventType: 'events' },
  });
}

// ------------------------------------------------------------------ linear
{
  const secrets = { good: 'lin_wh_good_secret', other: 'lin_wh_other_secret' };
  const bodyAt = (timestampS: number) =>
    JSON.stringify({
      action: 'update',
      type: 'Issue',
      createdAt: '2024-04-12T10:18:49.621Z',
      data: { id: 'iss_1', title: 'A bug', updatedAt: '2024-04-12T10:18:49.621Z' },
      webhookTimestamp: Math.round(timestampS * 1000),
      webhookId: 'wh_1',
    });
  const body = bodyAt(NOW_S);
  prove('linear (LinearWebhookClient of @linear/sdk verifies)', {
    provider: 'linear',
    secrets,
    body,
    timestamp: 'milliseconds',
    // Linear's timestamp is inside the signed body: a delivery at another time is another body.
    bodyAt,
    sign: (text, which) => ({
      'Linear-Signature': createHmac('sha256', pick(which, secrets)).update(text).digest('hex'),
      'Linear-Delivery': 'delivery-1',
      'Linear-Event': 'Issue',
    }),
    oracle: (text, headers) => {
      try {
        return new LinearWebhookClient(secrets.good).verify(
          Buffer.from(text),
          headers['Linear-Signature'] ?? '',
        );
      } catch {
        return false;
      }
    },
    identity: {
      eventId: 'delivery-1',
      eventType: 'Issue.update',
      entityType: 'Issue',
      entityId: 'iss_1',
      entityVersion: '1712917129621000',
      idUnsigned: true,
    },
  });
}

// ------------------------------------------------------------------ box
{
  const secrets = { good: 'box-primary-key', other: 'box-secondary-key' };
  const body = JSON.stringify({
    type: 'webhook_event',
    id: 'evt_box_1',
    created_at: '2023-11-14T22:13:20-00:00',
    trigger: 'FILE.UPLOADED',
    source: { id: 'file_1', type: 'file' },
  });
  const iso = (timestampS: number) => new Date(timestampS * 1000).toISOString().replace('.000Z', '+00:00');
  prove('box (WebhooksManager.validateMessage of box-node-sdk)', {
    provider: 'box',
    secrets,
    body,
    timestamp: 'seconds',
    sign: (text, which, timestampS) => {
      const timestamp = iso(timestampS);
      const signature = createHmac('sha256', pick(which, secrets))
        .update(text)
        .update(timestamp)
        .digest('base64');
      return {
        'box-delivery-id': 'd1',
        'box-delivery-timestamp': timestamp,
        'box-signature-algorithm': 'HmacSHA256',
        'box-signature-version': '1',
        [which === 'good' ? 'box-signature-primary' : 'box-signature-secondary']: signature,
      };
    },
    oracle: (text, headers) => WebhooksManager.validateMessage(text, headers, secrets.good),
    identity: { eventId: 'evt_box_1', eventType: 'FILE.UPLOADED', entityType: 'file', entityId: 'file_1' },
  });
}

// ------------------------------------------------------------------ clerk and resend (Svix under the hood)
{
  const secrets = {
    good: `whsec_${Buffer.from('clerk signing secret good').toString('base64')}`,
    other: `whsec_${Buffer.from('clerk signing secret else').toString('base64')}`,
  };
  const svixSign = (text: string, which: Which, timestampS: number): Headers => ({
    'svix-id': 'msg_2fVQa3Q8xg6Yk2yTq0sL5w',
    'svix-timestamp': String(timestampS),
    'svix-signature': new SvixWebhook(pick(which, secrets)).sign(
      'msg_2fVQa3Q8xg6Yk2yTq0sL5w',
      new Date(timestampS * 1000),
      text,
    ),
  });
  const clerkBody = JSON.stringify({
    object: 'event',
    type: 'user.updated',
    data: { id: 'user_1', object: 'user', updated_at: 1_700_000_000_123 },
  });
  prove('clerk (verifyWebhook of @clerk/backend)', {
    provider: 'clerk',
    secrets,
    body: clerkBody,
    timestamp: 'seconds',
    sign: svixSign,
    oracle: async (text, headers) => {
      try {
        await verifyWebhook(
          new Request('https://hooks.example.com/', { method: 'POST', headers, body: text }),
          {
            signingSecret: secrets.good,
          },
        );
        return true;
      } catch {
        return false;
      }
    },
    identity: {
      eventId: 'msg_2fVQa3Q8xg6Yk2yTq0sL5w',
      eventType: 'user.updated',
      entityType: 'user',
      entityId: 'user_1',
      entityVersion: '1700000000123',
    },
  });

  const resendBody = JSON.stringify({
    type: 'email.delivered',
    created_at: '2024-04-12T10:18:49Z',
    data: { email_id: 'e_1' },
  });
  prove('resend (webhooks.verify of the resend library)', {
    provider: 'resend',
    secrets,
    body: resendBody,
    timestamp: 'seconds',
    sign: svixSign,
    oracle: (text, headers) => {
      try {
        new Resend('re_test_key').webhooks.verify({
          payload: text,
          headers: {
            id: headers['svix-id'] ?? '',
            timestamp: headers['svix-timestamp'] ?? '',
            signature: headers['svix-signature'] ?? '',
          },
          webhookSecret: secrets.good,
        });
        return true;
      } catch {
        return false;
      }
    },
    identity: { eventId: 'msg_2fVQa3Q8xg6Yk2yTq0sL5w', eventType: 'email.delivered' },
  });
}

// ------------------------------------------------------------------ coinbase commerce
{
  const secrets = { good: 'cc-shared-secret-good', other: 'cc-shared-secret-other' };
  const body = JSON.stringify({
    id: 1,
    scheduled_for: '2024-04-12T10:18:49Z',
    event: {
      id: '24934862-d980-46cb-9402-43c81b0cdba6',
      resource: 'event',
      type: 'charge:created',
      api_version: '2018-03-22',
      data: { code: '66BEOV2A', id: 'f765421f-2ee6-4be1-8a1d-6b6d1ba8f1b0', resource: 'charge' },
    },
  });
  prove('coinbase-commerce (Webhook.verifySigHeader of coinbase-commerce-node)', {
    provider: 'coinbase-commerce',
    secrets,
    body,
    sign: (text, which) => ({
      'X-CC-Webhook-Signature': createHmac('sha256', pick(which, secrets)).update(text).digest('hex'),
    }),
    oracle: (text, headers) => {
      try {
        coinbase.Webhook.verifySigHeader(text, headers['X-CC-Webhook-Signature'] ?? '', secrets.good);
        return true;
      } catch {
        return false;
      }
    },
    identity: {
      eventId: '24934862-d980-46cb-9402-43c81b0cdba6',
      eventType: 'charge:created',
      entityType: 'charge',
      entityId: 'f765421f-2ee6-4be1-8a1d-6b6d1ba8f1b0',
    },
  });
}

// ------------------------------------------------------------------ razorpay
{
  const secrets = { good: 'razorpay-webhook-secret-good', other: 'razorpay-webhook-secret-other' };
  const body = JSON.stringify({
    entity: 'event',
    account_id: 'acc_1',
    event: 'payment.captured',
    contains: ['payment'],
    payload: { payment: { entity: { id: 'pay_1', status: 'captured' } } },
    created_at: NOW_S,
  });
  prove('razorpay (validateWebhookSignature of the razorpay library)', {
    provider: 'razorpay',
    secrets,
    body,
    sign: (text, which) => ({
      'X-Razorpay-Signature': createHmac('sha256', pick(which, secrets)).update(text).digest('hex'),
      'X-Razorpay-Event-Id': 'evt_rzp_1',
    }),
    oracle: (text, headers) =>
      Razorpay.validateWebhookSignature(text, headers['X-Razorpay-Signature'] ?? '', secrets.good),
    identity: { eventId: 'evt_rzp_1', eventType: 'payment.captured', idUnsigned: true },
  });
}

// ------------------------------------------------------------------ workos
{
  const secrets = { good: 'workos-webhook-secret-good', other: 'workos-webhook-secret-other' };
  // The SDK signs and verifies offline; the API key is never used.
  const webhooks = new WorkOS('sk_test_offline').webhooks;
  const body = JSON.stringify({
    object: 'event',
    id: 'event_01HBCY4ZXG2AGPBBYQ8WJYQ4QM',
    event: 'dsync.user.updated',
    data: { object: 'directory_user', id: 'directory_user_01E1X1B89NH8Z3SDFJR4H7RGX7', state: 'active' },
    created_at: '2023-11-14T22:13:20.000Z',
  });
  // The header as WorkOS sends it (`t=<ms>, v1=<hex>`), its signature from the SDK.
  const header = async (text: string, which: Which, timestampMs: number) =>
    `t=${timestampMs}, v1=${await webhooks.computeSignature(String(timestampMs), text, pick(which, secrets))}`;
  prove('workos (computeSignature and verifyHeader of @workos-inc/node)', {
    provider: 'workos',
    secrets,
    body,
    timestamp: 'milliseconds',
    sign: async (text, which, timestampS) => ({
      'WorkOS-Signature': await header(text, which, Math.round(timestampS * 1000)),
    }),
    oracle: async (text, headers) => {
      try {
        return await webhooks.verifyHeader({
          payload: text,
          sigHeader: headers['WorkOS-Signature'] ?? '',
          secret: secrets.good,
        });
      } catch {
        return false;
      }
    },
    identity: { eventId: 'event_01HBCY4ZXG2AGPBBYQ8WJYQ4QM', eventType: 'dsync.user.updated' },
  });

  it('workos: the header without the space after the comma is refused, though the SDK accepts it', async () => {
    // WorkOS sends `t=…, v1=…`; hookgate splits entries exactly as sent (docs/providers.md "Strict parsing").
    const provider = createProvider({ provider: 'workos' });
    const spaced = await header(body, 'good', NOW_MS);
    const unspaced = spaced.replace(', ', ',');
    expect(provider.verify(verifyRequest(body, { 'WorkOS-Signature': spaced }, [secrets.good]))).toEqual({
      ok: true,
    });
    expect(
      provider.verify(verifyRequest(body, { 'WorkOS-Signature': unspaced }, [secrets.good])),
    ).toMatchObject({
      code: 'timestamp_invalid',
    });
    await atTestClock(async () => {
      expect(await webhooks.verifyHeader({ payload: body, sigHeader: unspaced, secret: secrets.good })).toBe(
        true,
      );
    });
  });
}
