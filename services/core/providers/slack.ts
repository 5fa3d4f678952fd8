import { anyMatch, decodeHex, hmac } from './crypto.ts';
import { identifyEvent } from './extract.ts';
import { eventHeaders, headerRules, headerValue } from './headers.ts';
import { evaluatePointer } from './json-pointer.ts';
import { reject } from './rejection.ts';
import { checkTolerance, parseUnixSeconds } from './timestamp.ts';
import type { ExtractOverrides, Provider } from './types.ts';

const PREFIX = 'v0=';
const TIMESTAMP_SOURCE = 'X-Slack-Request-Timestamp header';
const RULES = headerRules({
  identity: ['x-slack-request-timestamp'],
  delivery: ['x-slack-retry-num', 'x-slack-retry-reason'],
  secret: ['x-slack-signature'],
});

export function createSlackProvider(overrides?: ExtractOverrides): Provider {
  return {
    name: 'slack',
    headerRules: RULES,
    verify(request) {
      const value = headerValue(request.headers, 'x-slack-signature');
      if (value === undefined)
        return reject('signature_missing', 'The request has no X-Slack-Signature header.');
      const rawTimestamp = headerValue(request.headers, 'x-slack-request-timestamp');
      const timestamp = parseUnixSeconds(rawTimestamp, TIMESTAMP_SOURCE);
      if (!timestamp.ok) return timestamp;
      const signature = value.startsWith(PREFIX) ? decodeHex(value.slice(PREFIX.length)) : null;
      if (signature === null) {
        return reject('signature_invalid', 'The X-Slack-Signature header is not of the form v0=<hex>.');
      }
      const signedPrefix = `v0:${rawTimestamp}:`;
      const expected = request.secrets.map((secret) =>
        hmac('sha256', secret, [signedPrefix, request.rawBody]),
      );
      if (!anyMatch([signature], expected)) {
        return reject(
          'signature_invalid',
          'The X-Slack-Signature header does not match any configured signing secret.',
        );
      }
      return (
        checkTolerance(timestamp.seconds, request.nowMs, request.toleranceSeconds, TIMESTAMP_SOURCE) ?? {
          ok: true,
        }
      );
    },
    identify({ headers, body }) {
      // Slack checks the endpoint by asking it to echo a challenge; that is a question, not an event.
      if (evaluatePointer(body, '/type') === 'url_verification') {
        const challenge = evaluatePointer(body, '/challenge');
        if (typeof challenge === 'string') return { ok: true, reply: { status: 200, body: { challenge } } };
      }
      // Slack's notice that it is dropping events for a while: acknowledged, nothing to store.
      if (evaluatePointer(body, '/type') === 'app_rate_limited') {
        return { ok: true, reply: { status: 200, body: { ok: true } } };
      }
      return identifyEvent(body, overrides, {
        eventId: { label: 'the body field /event_id', read: () => evaluatePointer(body, '/event_id') },
        eventType: {
          label: 'the body field /event/type or /type',
          read: () => evaluatePointer(body, '/event/type') ?? evaluatePointer(body, '/type'),
        },
        headers: eventHeaders(headers, RULES),
      });
    },
  };
}
