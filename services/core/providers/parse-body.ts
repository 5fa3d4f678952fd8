import type { Provider } from './types.ts';

// The one way a verified body becomes JSON, shared by the gateway and a quarantine release.

const UTF8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });

type SourceReviver = (key: string, value: unknown, context: { source?: string }) => unknown;

/** Integers past 2^53 keep their exact digits (as strings) instead of being rounded. */
const exactIntegers: SourceReviver = (_key, value, context) =>
  typeof value === 'number' &&
  !Number.isSafeInteger(value) &&
  context.source &&
  /^-?\d+$/.test(context.source)
    ? context.source
    : value;

// Ids such as Shopify's 18-digit ones would otherwise collide after rounding. The reviver is
// slower, so it only runs when the body has a digit run long enough to need it.
function parseJson(text: string): unknown {
  if (!/\d{16}/.test(text)) return JSON.parse(text);
  return JSON.parse(text, exactIntegers as Parameters<typeof JSON.parse>[1]);
}

/**
 * The body as the text the inbox stores and the value the provider identifies, or null when it
 * is not UTF-8 JSON. JSON is UTF-8 (RFC 8259): a lenient decode would swap bad bytes for U+FFFD
 * and store something other than what was signed.
 */
export function decodeVerifiedBody(
  provider: Pick<Provider, 'decodeBody'>,
  rawBody: Buffer,
): { readonly text: string; readonly body: unknown } | null {
  try {
    const text = UTF8.decode(rawBody);
    const decode = provider.decodeBody;
    if (decode) {
      // A form post (Twilio) is stored as the JSON document of its parameters.
      const body = decode(text);
      return { text: JSON.stringify(body), body };
    }
    return { text, body: parseJson(text) };
  } catch {
    return null;
  }
}
