import { createHash } from 'node:crypto';
import { headerValue } from './headers.ts';
import { evaluatePointer } from './json-pointer.ts';
import { schemePreset } from './preset.ts';

const HOOK_SECRET = 'x-hook-secret';
const HOOK_SIGNATURE = 'x-hook-signature';

/** A hook secret fit to echo in a header: what Asana sends is hex; anything else is not a handshake. */
const SECRET_SHAPE = /^[\x21-\x7e]{1,256}$/;

/**
 * Asana: `X-Hook-Signature: <hex HMAC-SHA256(body)>` with the secret Asana chose. Asana hands
 * that secret over once, in the handshake that confirms a new webhook: an unsigned POST with
 * `X-Hook-Secret`, which must be echoed. hookgate echoes it and keeps nothing (an unsigned
 * request must not choose the key later deliveries are checked with); the operator puts the
 * secret in `secrets`. To learn it, `revealHandshakeSecret: true` puts it in the handshake's
 * log line while the webhook is being created. Asana's heartbeats (`{"events":[]}`) are answered
 * and not stored.
 */
export const asanaPreset = schemePreset({
  title: 'Asana',
  scheme: {
    algorithm: 'hmac-sha256',
    headers: [HOOK_SIGNATURE],
    encoding: 'hex',
    content: [{ part: 'body' }],
  },
  // A delivery is a batch of events without an id of its own: the batch is keyed by its bytes.
  identity: { eventId: { digest: true }, eventType: { literal: 'events' } },
  hooks: (settings) => ({
    handshake({ method, headers }) {
      const secret = headerValue(headers, HOOK_SECRET);
      if (method !== 'POST' || secret === undefined || headerValue(headers, HOOK_SIGNATURE) !== undefined)
        return null;
      if (!SECRET_SHAPE.test(secret)) return null;
      const fingerprint = createHash('sha256').update(secret).digest('hex').slice(0, 16);
      const log: Record<string, string> = { secret_sha256: fingerprint };
      if (settings.revealHandshakeSecret) log.handshake_secret = secret;
      return {
        status: 200,
        headers: { 'X-Hook-Secret': secret },
        kind: 'asana_handshake',
        log,
      };
    },
    reply({ body }) {
      const events = evaluatePointer(body, '/events');
      return Array.isArray(events) && events.length === 0 ? { status: 200, kind: 'heartbeat' } : null;
    },
  }),
  evidence: { kind: 'docs', source: 'https://developers.asana.com/docs/webhooks-guide' },
});
