import { anyMatch, decodeBase64, decodeHex, hmac } from './crypto.ts';
import { identifyEvent } from './extract.ts';
import { headerValue, keepHeaders } from './headers.ts';
import type { HmacOptions } from './hmac-options.ts';
import { evaluatePointer } from './json-pointer.ts';
import { reject } from './rejection.ts';
import type { ExtractOverrides, Provider } from './types.ts';

/**
 * A plain HMAC of the body under a configurable header. There is no timestamp, so nothing
 * stops a captured delivery from being replayed; only deduplication on the event id limits it.
 */
export function createHmacProvider(options: HmacOptions, overrides?: ExtractOverrides): Provider {
  const header = options.header.toLowerCase();
  const decode = options.encoding === 'hex' ? decodeHex : decodeBase64;
  return {
    name: 'hmac',
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
      // As hmac-options.ts documents: a configured header first, then the extract pointer.
      const fromHeaderThenPointer = (name: string | undefined, pointer: string | undefined) => () =>
        (name === undefined ? undefined : headerValue(headers, name)) ??
        (pointer === undefined ? undefined : evaluatePointer(body, pointer));
      const where = (name: string | undefined, pointer: string | undefined, key: string): string =>
        [name && `the ${name} header`, pointer && `the JSON pointer "${pointer}" (extract.${key})`]
          .filter(Boolean)
          .join(' or ') || `hmac.${key}Header or extract.${key}, neither of which is configured`;
      return identifyEvent(
        body,
        { ...overrides, eventId: undefined, eventType: undefined },
        {
          eventId: {
            label: where(options.eventIdHeader, overrides?.eventId, 'eventId'),
            read: fromHeaderThenPointer(options.eventIdHeader, overrides?.eventId),
          },
          eventType: {
            label: where(options.eventTypeHeader, overrides?.eventType, 'eventType'),
            read: fromHeaderThenPointer(options.eventTypeHeader, overrides?.eventType),
          },
          eventTypeFallback: 'unknown',
          headers: keepHeaders(
            headers,
            options.eventTypeHeader === undefined ? [] : [options.eventTypeHeader],
            [header],
          ),
        },
      );
    },
  };
}
