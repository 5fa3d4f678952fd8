import { anyMatch, decodeHex, hmac } from './crypto.ts';
import { identifyEvent } from './extract.ts';
import { eventHeaders, headerRules, headerValue } from './headers.ts';
import { evaluatePointer } from './json-pointer.ts';
import { reject } from './rejection.ts';
import type { ExtractOverrides, Provider } from './types.ts';

const SIGNATURE_HEADER = 'x-hub-signature-256';
const PREFIX = 'sha256=';
const RULES = headerRules({
  identity: ['x-github-delivery', 'x-github-event'],
  delivery: ['x-github-event', 'x-github-hook-id'],
  // The SHA-1 signature is not checked, and not kept either.
  secret: [SIGNATURE_HEADER, 'x-hub-signature'],
});

/**
 * The entity a delivery is about, from the signed body alone (the event name is an unsigned
 * header): a pull request, else an issue (issue comments are about their issue), else the
 * repository. Each carries `updated_at`, which moves with every change of it, as its version.
 */
function entityOf(body: unknown): { type: string; path: string } | null {
  for (const type of ['pull_request', 'issue', 'repository']) {
    const object = evaluatePointer(body, `/${type}`);
    if (object !== null && typeof object === 'object' && !Array.isArray(object))
      return { type, path: `/${type}` };
  }
  return null;
}

/**
 * GitHub signs the body alone, with no timestamp: replay is bounded only by deduplication, on the
 * delivery id and (since that header is unsigned) on the body's digest.
 */
export function createGithubProvider(overrides?: ExtractOverrides): Provider {
  return {
    name: 'github',
    headerRules: RULES,
    verify(request) {
      const value = headerValue(request.headers, SIGNATURE_HEADER);
      if (value === undefined)
        return reject('signature_missing', 'The request has no X-Hub-Signature-256 header.');
      const signature = value.startsWith(PREFIX) ? decodeHex(value.slice(PREFIX.length)) : null;
      if (signature === null) {
        return reject('signature_invalid', 'The X-Hub-Signature-256 header is not of the form sha256=<hex>.');
      }
      const expected = request.secrets.map((secret) => hmac('sha256', secret, [request.rawBody]));
      if (!anyMatch([signature], expected)) {
        return reject(
          'signature_invalid',
          'The X-Hub-Signature-256 header does not match any configured secret.',
        );
      }
      return { ok: true };
    },
    identify({ headers, body }) {
      return identifyEvent(body, overrides, {
        eventId: {
          label: 'the X-GitHub-Delivery header',
          read: () => headerValue(headers, 'x-github-delivery'),
          unsigned: true,
        },
        // Unsigned too, and the body does not say its event name: the type is kept for routing
        // and reading, and the body digest stops a captured body from coming back under another.
        eventType: {
          label: 'the X-GitHub-Event header',
          read: () => {
            const event = headerValue(headers, 'x-github-event');
            const action = evaluatePointer(body, '/action');
            // `issues` alone says little; `issues.opened` is what handlers route on.
            return event !== undefined && typeof action === 'string' && action !== ''
              ? `${event}.${action}`
              : event;
          },
        },
        entityType: {
          label: 'the body object /pull_request, /issue or /repository',
          read: () => entityOf(body)?.type,
        },
        entityId: {
          label: 'the body field /pull_request/id, /issue/id or /repository/id',
          read: () => {
            const entity = entityOf(body);
            return entity === null ? undefined : evaluatePointer(body, `${entity.path}/id`);
          },
        },
        version: {
          label: 'the body field /pull_request/updated_at, /issue/updated_at or /repository/updated_at',
          read: () => {
            const entity = entityOf(body);
            return entity === null ? undefined : evaluatePointer(body, `${entity.path}/updated_at`);
          },
        },
        headers: eventHeaders(headers, RULES),
      });
    },
  };
}
