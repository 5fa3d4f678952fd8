import { schemePreset } from './preset.ts';

/** What is echoed: short and printable; anything else is not Dropbox's challenge. */
const CHALLENGE = /^[\x21-\x7e]{1,512}$/;

/**
 * Dropbox: `X-Dropbox-Signature: <hex HMAC-SHA256(body)>` with the app secret. Dropbox checks
 * the URL with `GET ?challenge=…`, answered with the challenge as text/plain and nosniff (it
 * reflects only what the request carried, and stores nothing). Notifications say only which
 * accounts changed and carry no id: the body's digest is the event id.
 */
export const dropboxPreset = schemePreset({
  title: 'Dropbox',
  scheme: {
    algorithm: 'hmac-sha256',
    headers: ['x-dropbox-signature'],
    encoding: 'hex',
    content: [{ part: 'body' }],
  },
  identity: { eventId: { digest: true }, eventType: { literal: 'list_folder' } },
  hooks: () => ({
    handshakeMethods: ['GET'],
    handshake({ method, query }) {
      if (method !== 'GET') return null;
      const challenge = new URLSearchParams(query).get('challenge');
      if (challenge === null || !CHALLENGE.test(challenge)) return null;
      return {
        status: 200,
        text: challenge,
        headers: { 'X-Content-Type-Options': 'nosniff' },
        kind: 'challenge',
      };
    },
  }),
  evidence: {
    kind: 'docs',
    source: 'https://www.dropbox.com/developers/reference/webhooks',
  },
});
