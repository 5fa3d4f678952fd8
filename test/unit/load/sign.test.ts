import { randomBytes } from 'node:crypto';
import { sign as githubSign, verify as githubVerify } from '@octokit/webhooks-methods';
import { Webhook } from 'standardwebhooks';
import Stripe from 'stripe';
import { describe, expect, it } from 'vitest';
import { nodeHmac } from '../../../load/driver/node-hmac.ts';
import { DEFAULT_MIX, eventAt, PROVIDERS, signEvent } from '../../../load/lib/mix.ts';
import { decodeBase64, signGithub, signStandardWebhooks, signStripe } from '../../../load/lib/sign.ts';

const SW_SECRET = 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw';
const STRIPE_SECRET = 'whsec_test_stripe_secret_for_hookgate';
const GITHUB_SECRET = "It's a Secret to Everybody";
const stripe = new Stripe('sk_test_hookgate');
const now = () => Math.floor(Date.now() / 1000);

describe('load signing modules, checked by the providers SDKs', () => {
  it('decodes base64 exactly as Buffer does, with and without padding', () => {
    for (let length = 0; length < 40; length += 1) {
      const bytes = randomBytes(length);
      const text = bytes.toString('base64');
      expect(Buffer.from(decodeBase64(text))).toEqual(bytes);
      expect(Buffer.from(decodeBase64(text.replace(/=+$/, '')))).toEqual(bytes);
    }
    expect(() => decodeBase64('not base64!')).toThrow();
  });

  it('Standard Webhooks: the standardwebhooks SDK verifies the signature, a changed body fails', () => {
    const body = JSON.stringify({ type: 'thing.updated', data: { id: 'thing_1', note: 'ünïcode ✓' } });
    const headers = signStandardWebhooks(nodeHmac, SW_SECRET, 'msg_1', now(), body);
    const webhook = new Webhook(SW_SECRET);
    expect(webhook.verify(body, headers)).toEqual(JSON.parse(body));
    expect(() => webhook.verify(`${body} `, headers)).toThrow();
    // Byte for byte what the SDK itself would send.
    const at = new Date(Number(headers['webhook-timestamp']) * 1000);
    expect(headers['webhook-signature']).toBe(webhook.sign('msg_1', at, body));
  });

  it('Stripe: constructEvent accepts the header, and it equals generateTestHeaderString', () => {
    const body = JSON.stringify({ id: 'evt_1', object: 'event', type: 'invoice.paid', data: { object: {} } });
    const timestamp = now();
    const headers = signStripe(nodeHmac, STRIPE_SECRET, timestamp, body);
    const event = stripe.webhooks.constructEvent(body, headers['stripe-signature']!, STRIPE_SECRET);
    expect(event.id).toBe('evt_1');
    expect(headers['stripe-signature']).toBe(
      stripe.webhooks.generateTestHeaderString({ payload: body, secret: STRIPE_SECRET, timestamp }),
    );
    expect(() =>
      stripe.webhooks.constructEvent(body, headers['stripe-signature']!, 'whsec_another_secret'),
    ).toThrow();
  });

  it('GitHub: @octokit/webhooks-methods verifies it, and the documented vector matches', async () => {
    const headers = signGithub(nodeHmac, GITHUB_SECRET, 'delivery-1', 'issues', 'Hello, World!');
    expect(headers['x-hub-signature-256']).toBe(
      'sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17',
    );
    expect(await githubVerify(GITHUB_SECRET, 'Hello, World!', headers['x-hub-signature-256']!)).toBe(true);
    expect(headers['x-hub-signature-256']).toBe(await githubSign(GITHUB_SECRET, 'Hello, World!'));
    expect(await githubVerify(GITHUB_SECRET, 'Hello, World?', headers['x-hub-signature-256']!)).toBe(false);
  });

  it('every event of the mix, for every provider, is signed so that the SDK accepts it', async () => {
    const run = { id: 'r1', startedAt: 1_764_460_800 };
    for (const provider of PROVIDERS) {
      for (let index = 0; index < 40; index += 1) {
        const event = eventAt(provider, run, index, DEFAULT_MIX);
        const secret =
          provider === 'standard-webhooks'
            ? SW_SECRET
            : provider === 'stripe'
              ? STRIPE_SECRET
              : GITHUB_SECRET;
        const headers = signEvent(provider, nodeHmac, secret, event, now());
        if (provider === 'standard-webhooks') {
          expect(new Webhook(secret).verify(event.body, headers)).toBeTruthy();
          expect(headers['webhook-id']).toBe(event.id);
        } else if (provider === 'stripe') {
          const parsed = stripe.webhooks.constructEvent(event.body, headers['stripe-signature']!, secret);
          expect(parsed.id).toBe(event.id);
        } else {
          expect(await githubVerify(secret, event.body, headers['x-hub-signature-256']!)).toBe(true);
          expect(headers['x-github-delivery']).toBe(event.id);
        }
      }
    }
  });
});
