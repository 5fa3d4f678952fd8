import { schemePreset } from './preset.ts';

const AUTHORITY = /^([a-z][a-z0-9+.-]*:\/\/)([^/?#]*)/i;

/**
 * The configured URL without a port and with the scheme's default port: Twilio's library
 * checks both spellings, since either may be what Twilio signed, and hookgate tries the same.
 */
export function twilioUrls(url: string): readonly string[] {
  const match = AUTHORITY.exec(url);
  if (match === null) return [url];
  const [whole, scheme = '', authority = ''] = match;
  const rest = url.slice(whole.length);
  const at = authority.lastIndexOf('@') + 1;
  const user = authority.slice(0, at);
  const hostPort = authority.slice(at);
  // In an IPv6 literal the colons before `]` are not a port's.
  const colon = hostPort.indexOf(':', hostPort.lastIndexOf(']') + 1);
  const host = colon < 0 ? hostPort : hostPort.slice(0, colon);
  const port = colon < 0 ? (scheme.toLowerCase() === 'https://' ? ':443' : ':80') : hostPort.slice(colon);
  return [...new Set([`${scheme}${user}${host}${rest}`, `${scheme}${user}${host}${port}${rest}`])];
}

/**
 * A form body as the JSON document stored for it: repeated names become arrays. Built as own
 * properties (a `__proto__` parameter stays a parameter, never a prototype).
 */
export function formToJson(text: string): Record<string, string | string[]> {
  const values = new Map<string, string[]>();
  for (const [name, value] of new URLSearchParams(text))
    values.set(name, [...(values.get(name) ?? []), value]);
  return Object.fromEntries(
    [...values].map(([name, list]) => [name, list.length === 1 ? (list[0] as string) : list]),
  );
}

/**
 * Twilio's form-encoded webhooks (messaging and voice status callbacks): HMAC-SHA1 of the URL
 * followed by the sorted form parameters. The parameters are read from the body to build the
 * signed content (they are what Twilio signs); nothing is stored until the signature matches.
 */
export const twilioPreset = schemePreset({
  title: 'Twilio (form webhooks)',
  scheme: {
    algorithm: 'hmac-sha1',
    headers: ['x-twilio-signature'],
    encoding: 'base64',
    content: [{ part: 'url' }, { part: 'form-params' }],
  },
  needsUrl: true,
  urls: twilioUrls,
  identity: {
    // The same across Twilio's retries of one request; unsigned, so the body digest is deduplicated too.
    eventId: { header: 'i-twilio-idempotency-token' },
    eventType: {
      first: [{ pointer: '/EventType' }, { pointer: '/MessageStatus' }, { pointer: '/CallStatus' }],
    },
    eventTypeFallback: 'request',
    keep: ['i-twilio-idempotency-token'],
  },
  hooks: () => ({ decodeBody: formToJson }),
  evidence: { kind: 'sdk', source: 'twilio' },
});
