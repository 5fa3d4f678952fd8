import { Webhook } from 'standardwebhooks';
import { describe, expect, it } from 'vitest';
import { demoSecretPaths, PUBLISHED_DEMO_SECRETS } from '../../services/core/config/demo-secrets.ts';
import { parseConfig } from '../../services/core/config/load.ts';
import { createProvider } from '../../services/core/providers/index.ts';

// The published demo secrets are refused outside the demo. A Standard Webhooks secret is a key in
// base64, which the verifier also accepts without `whsec_`, in the URL-safe alphabet and without
// padding: every such spelling is the same key, so the guard compares the key bytes, not the text.
const [DEMO_KEY, DEMO_STRIPE] = PUBLISHED_DEMO_SECRETS as [string, string];
const BARE = DEMO_KEY.slice('whsec_'.length);
const URL_SAFE = BARE.replace(/\+/g, '-').replace(/\//g, '_');

const respellings = [
  ['without whsec_', BARE],
  ['URL-safe alphabet', `whsec_${URL_SAFE}`],
  ['URL-safe, without whsec_', URL_SAFE],
];

function pathsFor(provider: string, secrets: string[]) {
  return demoSecretPaths(parseConfig({ endpoints: { demo: { provider, secrets } } }, {}));
}

describe('published demo secrets, however they are spelled', () => {
  it.each(respellings)(
    '%s: verifies deliveries signed with the published secret, and is refused',
    (_what, secret) => {
      // The re-spelling really is the published key: the SDK's signature under it verifies.
      const body = '{"type":"thing.updated"}';
      const at = new Date();
      const signature = new Webhook(DEMO_KEY).sign('msg_1', at, body);
      const verdict = createProvider({ provider: 'standard-webhooks' }).verify({
        rawBody: Buffer.from(body),
        headers: {
          'webhook-id': 'msg_1',
          'webhook-timestamp': String(Math.floor(at.getTime() / 1000)),
          'webhook-signature': signature,
        },
        secrets: [secret],
        nowMs: at.getTime(),
        toleranceSeconds: 300,
      });
      expect(verdict.ok).toBe(true);
      expect(pathsFor('standard-webhooks', ['whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw', secret])).toEqual([
        'endpoints.demo.secrets[1]',
      ]);
      expect(pathsFor('svix', [secret])).toEqual(['endpoints.demo.secrets[0]']);
    },
  );

  it('the published Stripe-style secret is refused as written, on any provider', () => {
    expect(pathsFor('stripe', [DEMO_STRIPE])).toEqual(['endpoints.demo.secrets[0]']);
    expect(pathsFor('github', [DEMO_STRIPE])).toEqual(['endpoints.demo.secrets[0]']);
  });

  it('other keys pass, including ones that differ from the demo key by one character', () => {
    const near = `whsec_${BARE.slice(0, -1)}${BARE.endsWith('A') ? 'B' : 'A'}`;
    expect(pathsFor('standard-webhooks', [near, 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw'])).toEqual([]);
    expect(pathsFor('stripe', ['whsec_a_real_secret_from_the_dashboard'])).toEqual([]);
  });
});
