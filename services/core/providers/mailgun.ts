import { anyMatch, decodeHex, hmac } from './crypto.ts';
import { identifyEvent } from './extract.ts';
import { headerRules } from './headers.ts';
import { evaluatePointer } from './json-pointer.ts';
import type { Preset } from './preset.ts';
import { reject } from './rejection.ts';
import { checkTolerance, parseUnixSeconds } from './timestamp.ts';
import type { Provider } from './types.ts';

const SOURCE = 'body field /signature/timestamp';

interface Signed {
  readonly timestamp: string;
  readonly token: string;
  readonly signature: string;
}

/** The signature fields, read from the body: Mailgun puts its signature inside the JSON it signs nothing of. */
function signedFields(rawBody: Buffer): Signed | null {
  let body: unknown;
  try {
    body = JSON.parse(rawBody.toString('utf8'));
  } catch {
    return null;
  }
  const timestamp = evaluatePointer(body, '/signature/timestamp');
  const token = evaluatePointer(body, '/signature/token');
  const signature = evaluatePointer(body, '/signature/signature');
  if (typeof timestamp !== 'string' || typeof token !== 'string' || typeof signature !== 'string')
    return null;
  return { timestamp, token, signature };
}

/**
 * Mailgun signs only a timestamp and a random token (HMAC-SHA256, hex, with the webhook signing
 * key), both carried in the body beside the event, not the event itself. So the body is parsed
 * to find them (before anything is trusted), and the timestamp bounds how long a captured
 * signature can be reused: within `tolerance`, with other event data too, since nothing signs
 * it. The event id (`/event-data/id`, stable across Mailgun's retries) is unsigned, so the body
 * digest is deduplicated as well: a byte-identical replay is a duplicate.
 */
function createMailgunProvider(
  name: string,
  overrides: Parameters<Preset['create']>[0]['overrides'],
): Provider {
  return {
    name,
    // Mailgun's signature, token and timestamp travel in the body (kept with it); no header counts.
    headerRules: headerRules({ secret: [] }),
    verify(request) {
      const fields = signedFields(request.rawBody);
      if (fields === null)
        return reject(
          'signature_missing',
          'The body has no /signature object with timestamp, token and signature.',
        );
      const timestamp = parseUnixSeconds(fields.timestamp, SOURCE);
      if (!timestamp.ok) return timestamp;
      const signature = decodeHex(fields.signature);
      if (signature === null)
        return reject('signature_invalid', 'The body field /signature/signature is not hex.');
      const expected = request.secrets.map((secret) =>
        hmac('sha256', secret, [fields.timestamp, fields.token]),
      );
      if (!anyMatch([signature], expected)) {
        return reject(
          'signature_invalid',
          'The body field /signature/signature does not match any configured signing key.',
        );
      }
      return (
        checkTolerance(timestamp.seconds, request.nowMs, request.toleranceSeconds, SOURCE) ?? { ok: true }
      );
    },
    identify({ body }) {
      const identified = identifyEvent(body, overrides, {
        eventId: {
          label: 'the body field /event-data/id',
          read: () => evaluatePointer(body, '/event-data/id'),
          unsigned: true,
        },
        eventType: {
          label: 'the body field /event-data/event',
          read: () => evaluatePointer(body, '/event-data/event'),
        },
        headers: {},
      });
      if (!identified.ok || !('event' in identified)) return identified;
      // Nothing in the body is signed, an overridden id included.
      return { ok: true, event: { ...identified.event, idUnsigned: true } };
    },
  };
}

export const mailgunPreset: Preset = {
  title: 'Mailgun',
  evidence: {
    kind: 'docs',
    source: 'https://documentation.mailgun.com/docs/mailgun/user-manual/webhooks/securing-webhooks',
  },
  create: (settings) => createMailgunProvider(settings.name, settings.overrides),
};
