import { evaluatePointer } from './json-pointer.ts';
import { schemePreset } from './preset.ts';

/**
 * Discord's Webhook Events: Ed25519 over the timestamp and the body, the application's public
 * key from the Developer Portal. Discord checks the URL with a signed PING (type 0), which must
 * get an empty 204; an Interactions endpoint's PING (type 1, no event) gets a PONG so the same
 * URL can be saved there. Events carry no id: the signed body's digest is the event id.
 */
export const discordPreset = schemePreset({
  title: 'Discord (webhook events)',
  scheme: {
    algorithm: 'ed25519',
    headers: ['x-signature-ed25519'],
    encoding: 'hex',
    // discord-interactions decodes the hex before comparing, so it accepts either case.
    anyCaseHex: true,
    content: [{ part: 'timestamp' }, { part: 'body' }],
    timestamp: { from: { header: 'x-signature-timestamp' }, unit: 'seconds' },
  },
  identity: {
    eventId: { digest: true },
    eventType: { pointer: '/event/type' },
  },
  hooks: () => ({
    reply({ body }) {
      const type = evaluatePointer(body, '/type');
      if (type === 0) return { status: 204, kind: 'ping' };
      if (type === 1 && evaluatePointer(body, '/event') === undefined)
        return { status: 200, body: { type: 1 }, kind: 'interaction_ping' };
      return null;
    },
  }),
  evidence: { kind: 'sdk', source: 'discord-interactions' },
});
