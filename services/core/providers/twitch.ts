import { evaluatePointer } from './json-pointer.ts';
import { schemePreset } from './preset.ts';

const MESSAGE_ID = 'twitch-eventsub-message-id';
const MESSAGE_TIMESTAMP = 'twitch-eventsub-message-timestamp';

/**
 * Twitch EventSub over webhooks: HMAC-SHA256 of message id + timestamp + body with the secret
 * given when subscribing. The id and timestamp are signed, so the id is a signed dedupe key.
 * A subscription is confirmed by a signed `webhook_callback_verification` whose challenge is
 * echoed as text/plain. Which kind a message is, is read from the signed body (a challenge, an
 * event, or neither: a revocation), not from the unsigned message-type header.
 */
export const twitchPreset = schemePreset({
  title: 'Twitch (EventSub webhooks)',
  scheme: {
    algorithm: 'hmac-sha256',
    headers: ['twitch-eventsub-message-signature'],
    encoding: 'hex',
    prefix: 'sha256=',
    content: [{ header: MESSAGE_ID }, { header: MESSAGE_TIMESTAMP }, { part: 'body' }],
    timestamp: { from: { header: MESSAGE_TIMESTAMP }, unit: 'rfc3339' },
    idHeader: MESSAGE_ID,
  },
  identity: {
    eventId: { header: MESSAGE_ID },
    eventType: {
      ifPresent: '/event',
      present: { pointer: '/subscription/type' },
      otherwise: { join: [{ literal: 'revocation' }, { pointer: '/subscription/type' }], separator: '.' },
    },
    keep: ['twitch-eventsub-message-retry', 'twitch-eventsub-subscription-version'],
  },
  hooks: () => ({
    reply({ body }) {
      const challenge = evaluatePointer(body, '/challenge');
      if (typeof challenge !== 'string') return null;
      return { status: 200, text: challenge, kind: 'webhook_callback_verification' };
    },
  }),
  evidence: {
    kind: 'docs',
    source: 'https://dev.twitch.tv/docs/eventsub/handling-webhook-events/',
  },
});
