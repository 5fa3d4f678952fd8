import { evaluatePointer } from './json-pointer.ts';
import { schemePreset } from './preset.ts';

/**
 * Xero: `x-xero-signature: <base64 HMAC-SHA256(body)>` with the webhook key. Before Xero sends
 * events it checks the endpoint ("intent to receive") with signed and wrongly signed payloads
 * whose `events` is empty: the first must get 200, the others 401, as they do here (the empty
 * batch stores nothing). A delivery is a batch without an id of its own: its digest is the id.
 * Xero expects "no body in the response", so deliveries are acknowledged with none.
 */
export const xeroPreset = schemePreset({
  title: 'Xero',
  scheme: {
    algorithm: 'hmac-sha256',
    headers: ['x-xero-signature'],
    encoding: 'base64',
    content: [{ part: 'body' }],
  },
  identity: { eventId: { digest: true }, eventType: { literal: 'events' } },
  emptyAcknowledgement: true,
  hooks: () => ({
    reply({ body }) {
      const events = evaluatePointer(body, '/events');
      return Array.isArray(events) && events.length === 0 ? { status: 200, kind: 'intent_to_receive' } : null;
    },
  }),
  evidence: {
    kind: 'docs',
    source: 'https://developer.xero.com/documentation/guides/webhooks/configuring-your-server/',
  },
});
