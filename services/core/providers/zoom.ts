import { bytesEqual, decodeHex, hmac } from './crypto.ts';
import { headerValue } from './headers.ts';
import { evaluatePointer } from './json-pointer.ts';
import { schemePreset } from './preset.ts';

const PREFIX = 'v0=';

/**
 * Zoom: `x-zm-signature: v0=<hex HMAC-SHA256("v0:" + timestamp + ":" + body)>` with the app's
 * secret token. Zoom validates the URL with a signed `endpoint.url_validation` event, answered
 * with the plain token and its HMAC under the secret that signed the request (during a
 * rotation, the one Zoom holds).
 */
export const zoomPreset = schemePreset({
  title: 'Zoom',
  scheme: {
    algorithm: 'hmac-sha256',
    headers: ['x-zm-signature'],
    encoding: 'hex',
    prefix: PREFIX,
    content: [{ literal: 'v0:' }, { part: 'timestamp' }, { literal: ':' }, { part: 'body' }],
    timestamp: { from: { header: 'x-zm-request-timestamp' }, unit: 'seconds' },
  },
  // Zoom's events carry no id; a retry resends the same body.
  identity: { eventId: { digest: true }, eventType: { pointer: '/event' } },
  hooks: () => ({
    reply({ body, headers, rawBody, secrets }) {
      if (evaluatePointer(body, '/event') !== 'endpoint.url_validation') return null;
      const plainToken = evaluatePointer(body, '/payload/plainToken');
      if (typeof plainToken !== 'string' || rawBody === undefined || secrets === undefined) return null;
      const signature = decodeHex((headerValue(headers, 'x-zm-signature') ?? '').slice(PREFIX.length));
      const timestamp = headerValue(headers, 'x-zm-request-timestamp') ?? '';
      let signer: string | undefined;
      for (const secret of secrets) {
        const expected = hmac('sha256', secret, [`v0:${timestamp}:`, rawBody]);
        if (signature !== null && bytesEqual(signature, expected)) signer ??= secret;
      }
      if (signer === undefined) return null;
      const encryptedToken = hmac('sha256', signer, [plainToken]).toString('hex');
      return { status: 200, body: { plainToken, encryptedToken }, kind: 'url_validation' };
    },
  }),
  evidence: { kind: 'docs', source: 'https://developers.zoom.us/docs/api/webhooks/#verify-webhook-events' },
});
