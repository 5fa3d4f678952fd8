import { anyMatch, decodeBase64, decodeHex, hmac } from './crypto.ts';
import { identifyEvent } from './extract.ts';
import { eventHeaders, headerRules, headerValue } from './headers.ts';
import type { HmacOptions } from './hmac-options.ts';
import { evaluatePointer } from './json-pointer.ts';
import { reject } from './rejection.ts';
import type { ExtractOverrides, Provider } from './types.ts';

/**
 * A plain HMAC of the body under a configurable header. There is no timestamp, so nothing
 * stops a captured delivery from being replayed; only deduplication limits it (on the event
 * id, and on the body's digest when the id comes from the unsigned eventIdHeader).
 */
export function createHmacProvider(options: HmacOptions, overrides?: ExtractOverrides): Provider {
  const header = options.header.toLowerCase();
  const decode = options.encoding === 'hex' ? decodeHex : decodeBase64;
  const rules = headerRules({
    identity: [options.eventIdHeader, options.eventTypeHeader],
    delivery: [options.eventTypeHeader],
    secret: [header],
  });
  return {
    name: 'hmac',
    headerRules: rules,
    verify(request) {
      const value = headerValue(request.headers, header);
      if (value === undefined)
        return reject('signature_missing', `The request has no ${options.header} header.`);
      const signature = value.startsWith(options.prefix) ? decode(value.slice(options.prefix.length)) : null;
      if (signature === null) {
        const form = `${options.prefix}<${options.encoding}>`;
        return reject('signature_invalid', `The ${options.header} header is not of the form ${form}.`);
      }
      const expected = request.secrets.map((secret) => hmac(options.algorithm, secret, [request.rawBody]));
      if (!anyMatch([signature], expected)) {
        return reject(
          'signature_invalid',
          `The ${options.header} header does not match any configured secret.`,
        );
      }
      return { ok: true };
    },
    identify({ headers, body }) {
      // As hmac-options.ts documents: a configured header first, then the extract pointer. A
      // header is unsigned; a pointer reads the signed body.
      const where = (name: string | undefined, pointer: string | undefined, key: string): string =>
        [name && `the ${name} header`, pointer && `the JSON pointer "${pointer}" (extract.${key})`]
          .filter(Boolean)
          .join(' or ') || `hmac.${key}Header or extract.${key}, neither of which is configured`;
      const source = (name: string | undefined, pointer: string | undefined, key: string) => {
        const fromHeader = name === undefined ? undefined : headerValue(headers, name);
        return {
          label: where(name, pointer, key),
          read: () => fromHeader ?? (pointer === undefined ? undefined : evaluatePointer(body, pointer)),
          unsigned: fromHeader !== undefined,
        };
      };
      return identifyEvent(
        body,
        { ...overrides, eventId: undefined, eventType: undefined },
        {
          eventId: source(options.eventIdHeader, overrides?.eventId, 'eventId'),
          eventType: source(options.eventTypeHeader, overrides?.eventType, 'eventType'),
          // `unknown` only where no type source is configured: a configured header or pointer that
          // is absent is a delivery that cannot become an event (quarantined, event_type_missing).
          ...(options.eventTypeHeader === undefined && overrides?.eventType === undefined
            ? { eventTypeFallback: 'unknown' }
            : {}),
          headers: eventHeaders(headers, rules),
        },
      );
    },
  };
}
