/**
 * Header values the relay copies from an event (its id, its type, the idempotency key built
 * from the id) are the provider's text, and an HTTP header value is not any text: fetch refuses
 * CR, LF and other controls, and anything above U+00FF. Such a value is sent percent-encoded
 * (its UTF-8 bytes, as `encodeURIComponent` writes them, so `decodeURIComponent` gives it back);
 * any other value is sent exactly as it is. `%` itself counts as needing the encoding, which keeps
 * the mapping one-to-one: an encoded value always holds a `%`, a value sent as it is never does,
 * so `a\nb` (sent `a%0Ab`) and a literal `a%0Ab` (sent `a%250Ab`) stay two keys.
 */
const AS_IT_IS = /^[\x21-\x24\x26-\x7e](?:[\x20-\x24\x26-\x7e]*[\x21-\x24\x26-\x7e])?$/;

export function headerValue(value: string): string {
  if (AS_IT_IS.test(value)) return value;
  let out = '';
  for (const byte of Buffer.from(value, 'utf8')) {
    out +=
      byte > 0x20 && byte < 0x7f && byte !== 0x25
        ? String.fromCharCode(byte)
        : `%${byte.toString(16).toUpperCase().padStart(2, '0')}`;
  }
  return out;
}
