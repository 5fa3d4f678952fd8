import { headerValue } from './headers.ts';
import { schemePreset } from './preset.ts';

const CHALLENGE_HEADER = 'x-okta-verification-challenge';
const CHALLENGE = /^[\x20-\x7e]{1,512}$/;

/**
 * Okta event hooks authenticate with a header value you choose (by default in `Authorization`),
 * compared as a shared token: nothing is signed. Okta verifies the endpoint once with a GET
 * carrying `X-Okta-Verification-Challenge`, answered `{"verification": …}` (it reflects only
 * what the request carried, and stores nothing). For another header name, use the `scheme`
 * provider with `algorithm: token`.
 */
export const oktaPreset = schemePreset({
  title: 'Okta (event hooks)',
  scheme: { algorithm: 'token', headers: ['authorization'], encoding: 'text', content: [] },
  identity: { eventId: { pointer: '/eventId' }, eventType: { pointer: '/eventType' } },
  hooks: () => ({
    handshakeMethods: ['GET'],
    handshake({ method, headers }) {
      if (method !== 'GET') return null;
      const challenge = headerValue(headers, CHALLENGE_HEADER);
      if (challenge === undefined || !CHALLENGE.test(challenge)) return null;
      return { status: 200, body: { verification: challenge }, kind: 'verification' };
    },
  }),
  evidence: {
    kind: 'docs',
    source: 'https://developer.okta.com/docs/concepts/event-hooks/',
  },
});
