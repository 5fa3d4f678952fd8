import { destinationSecrets } from '../config/destination-secrets.ts';
import type { DestinationConfig } from '../config/destinations-schema.ts';

// What an error text of a destination may not keep: the values its URL and headers took from the
// environment or from files, and its signing secrets (a URL with credentials is refused at load). A receiver echoes
// what it was sent in whatever spelling its framework produced: a query's `ab+Cd/Ef+gh=` comes
// back as `ab Cd/Ef gh=` (decoded, `+` as a space), `ab%2BCd%2FEf%2Bgh%3D` (encoded, in either
// case), or JSON-escaped (`ab+Cd\/Ef+gh=`); fetch names the URL as written. Every spelling is
// replaced by the reference it was written as (`${LEDGER_TOKEN}`), or `[redacted]`, in every
// error text stored or logged for a destination, and in the answer's bytes kept.

export interface Redactor {
  text(text: string): string;
  bytes(bytes: Buffer): Buffer;
}

interface Secret {
  readonly value: string;
  readonly shownAs: string;
}

function tryDecode(text: string): string | null {
  try {
    return decodeURIComponent(text);
  } catch {
    return null;
  }
}

/** Every spelling of a value a receiver or a library may write back. */
export function spellingsOf(value: string): string[] {
  const decoded = tryDecode(value);
  const plusAsSpace = value.replaceAll('+', ' ');
  const formDecoded = tryDecode(plusAsSpace);
  const plain = [value, decoded, plusAsSpace, formDecoded].filter((text): text is string => text !== null);
  const encoded = plain.flatMap((text) => [
    encodeURIComponent(text),
    encodeURI(text),
    new URLSearchParams({ v: text }).toString().slice(2),
  ]);
  const json = [...plain, ...encoded].flatMap((text) => {
    const escaped = JSON.stringify(text).slice(1, -1);
    return [escaped, escaped.replaceAll('/', '\\/')];
  });
  return [...new Set([...plain, ...encoded, ...json])].filter((text) => text.length > 0);
}

const escapeRegExp = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

/** A pattern for one spelling: its percent escapes in either case (`%2F` and `%2f`). */
function patternOf(spelling: string): string {
  return escapeRegExp(spelling).replace(
    /%([0-9A-Fa-f])([0-9A-Fa-f])/g,
    (_, a: string, b: string) =>
      `%[${a.toUpperCase()}${a.toLowerCase()}][${b.toUpperCase()}${b.toLowerCase()}]`,
  );
}

/**
 * Shorter values are not looked for: they would match ordinary text (a status code, a word) and
 * garble every error, and give away little.
 */
const SHORTEST_SECRET = 4;

export function createRedactor(secrets: readonly Secret[]): Redactor {
  const pairs = secrets
    .filter((secret) => secret.value.length >= SHORTEST_SECRET)
    .flatMap((secret) =>
      spellingsOf(secret.value).map((spelling) => ({ spelling, shownAs: secret.shownAs })),
    );
  if (pairs.length === 0) return { text: (text) => text, bytes: (bytes) => bytes };
  // Longest first, so a value that contains another is replaced whole.
  pairs.sort((x, y) => y.spelling.length - x.spelling.length);
  const pattern = new RegExp(pairs.map((pair) => `(${patternOf(pair.spelling)})`).join('|'), 'g');
  const text = (input: string): string =>
    input.replace(pattern, (...match: unknown[]) => {
      const groups = match.slice(1, pairs.length + 1);
      const index = groups.findIndex((group) => group !== undefined);
      return pairs[index]?.shownAs ?? '[redacted]';
    });
  // The kept bytes: each spelling as UTF-8 and as UTF-16 (either order), replaced in place.
  const byteForms = pairs.flatMap(({ spelling, shownAs }) =>
    (['utf8', 'utf16le'] as const).flatMap((encoding) => {
      const found = Buffer.from(spelling, encoding);
      const shown = Buffer.from(shownAs, encoding);
      return encoding === 'utf16le'
        ? [
            { found, shown },
            { found: Buffer.from(found).swap16(), shown: Buffer.from(shown).swap16() },
          ]
        : [{ found, shown }];
    }),
  );
  const bytes = (input: Buffer): Buffer => {
    let out = input;
    for (const { found, shown } of byteForms) {
      if (found.length === 0 || out.indexOf(found) === -1) continue;
      const parts: Buffer[] = [];
      let from = 0;
      for (let at = out.indexOf(found); at !== -1; at = out.indexOf(found, from)) {
        parts.push(out.subarray(from, at), shown);
        from = at + found.length;
      }
      parts.push(out.subarray(from));
      out = Buffer.concat(parts);
    }
    return out;
  };
  return { text, bytes };
}

/** The secrets of one destination: referenced values and signing secrets. */
export function destinationRedactor(settings: DestinationConfig): Redactor {
  const secrets: Secret[] = destinationSecrets(settings).map((secret) => ({
    value: secret.value,
    shownAs: secret.reference,
  }));
  for (const secret of settings.signing?.secrets ?? [])
    secrets.push({ value: secret, shownAs: '[redacted]' });
  return createRedactor(secrets);
}
