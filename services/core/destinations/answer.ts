// What a destination answered, made safe to store and to read: its first bytes are kept as bytes
// (a bytea column takes any byte sequence), and every text written beside them (the error, the
// readable rendering of the body, the headers) is escaped and bounded here, so no answer can make
// an attempt's record fail. PostgreSQL's text refuses a NUL (22021), which a UTF-16 error page, a
// compressed body or a hostile receiver sends; one such answer once failed the records of every
// attempt written in the same statement.

/** The first bytes of an error answer read and kept: a huge (or endless) body is not read whole. */
export const ANSWER_BYTES = 1200;
/** Characters of the answer's rendering kept (in the error text and `response_head`). */
export const ANSWER_CHARS = 300;
/** The longest error text stored for an attempt (and as the delivery's `last_error`). */
export const ERROR_CHARS = 1000;
/** The answer's headers as text: this many characters at most, and this many headers. */
const HEADER_CHARS = 2000;
const HEADER_COUNT = 40;
const HEADER_VALUE_CHARS = 200;

const hex = (byte: number): string => `\\x${byte.toString(16).padStart(2, '0')}`;

/**
 * A text PostgreSQL stores whatever it holds: NUL and the other C0 controls (tab, newline and
 * carriage return kept) as `\xNN`, a lone surrogate as `\uXXXX`, and at most `max` characters
 * once escaped (`…` marks a cut). The CLI and the console escape what is left for their screens.
 */
export function storableText(text: string, max: number): string {
  let out = '';
  for (let i = 0; i < text.length; i += 1) {
    const code = text.charCodeAt(i);
    let piece: string;
    if (code < 0x20 && code !== 0x09 && code !== 0x0a && code !== 0x0d) piece = hex(code);
    else if (code >= 0xd800 && code <= 0xdbff) {
      const next = text.charCodeAt(i + 1);
      piece = next >= 0xdc00 && next <= 0xdfff ? text.slice(i, i + 2) : `\\u${code.toString(16)}`;
    } else if (code >= 0xdc00 && code <= 0xdfff) piece = `\\u${code.toString(16)}`;
    else piece = text[i]!;
    if (out.length + piece.length > max) return `${out}…`;
    out += piece;
    if (piece.length === 2 && code >= 0xd800) i += 1;
  }
  return out;
}

/** UTF-8 where the bytes are valid UTF-8; each byte that is not, as `\xNN`. */
export function utf8OrEscaped(bytes: Uint8Array): string {
  let out = '';
  let i = 0;
  while (i < bytes.length) {
    const first = bytes[i]!;
    if (first < 0x80) {
      out += String.fromCharCode(first);
      i += 1;
      continue;
    }
    const [need, min, initial] =
      first >= 0xc2 && first <= 0xdf
        ? [1, 0x80, first & 0x1f]
        : first >= 0xe0 && first <= 0xef
          ? [2, 0x800, first & 0x0f]
          : first >= 0xf0 && first <= 0xf4
            ? [3, 0x10000, first & 0x07]
            : [0, 0, 0];
    let code = initial;
    let valid = need > 0 && i + need < bytes.length;
    for (let k = 1; valid && k <= need; k += 1) {
      const next = bytes[i + k];
      if (next === undefined || (next & 0xc0) !== 0x80) valid = false;
      else code = (code << 6) | (next & 0x3f);
    }
    if (valid && code >= min && code <= 0x10ffff && !(code >= 0xd800 && code <= 0xdfff)) {
      out += String.fromCodePoint(code);
      i += need + 1;
    } else {
      out += hex(first);
      i += 1;
    }
  }
  return out;
}

type Charset = 'utf-8' | 'utf-16le' | 'utf-16be' | 'latin1' | { readonly label: string };

/** The charset named by a content-type (`text/html; charset=utf-16`), if any. */
function declaredCharset(contentType: string | null): string | null {
  const match = /;\s*charset\s*=\s*"?([^";\s]+)"?/i.exec(contentType ?? '');
  return match ? match[1]!.toLowerCase() : null;
}

/** A body without a byte-order mark or a charset that looks like UTF-16 (ASCII text's zero bytes). */
function looksLikeUtf16(bytes: Uint8Array): 'utf-16le' | 'utf-16be' | null {
  const pairs = Math.floor(bytes.length / 2);
  if (pairs < 2) return null;
  let evenZeros = 0;
  let oddZeros = 0;
  for (let i = 0; i < pairs * 2; i += 2) {
    if (bytes[i] === 0) evenZeros += 1;
    if (bytes[i + 1] === 0) oddZeros += 1;
  }
  if (oddZeros >= pairs * 0.4 && evenZeros <= pairs * 0.1) return 'utf-16le';
  if (evenZeros >= pairs * 0.4 && oddZeros <= pairs * 0.1) return 'utf-16be';
  return null;
}

function charsetOf(bytes: Uint8Array, contentType: string | null): { charset: Charset; skip: number } {
  if (bytes[0] === 0xef && bytes[1] === 0xbb && bytes[2] === 0xbf) return { charset: 'utf-8', skip: 3 };
  if (bytes[0] === 0xff && bytes[1] === 0xfe) return { charset: 'utf-16le', skip: 2 };
  if (bytes[0] === 0xfe && bytes[1] === 0xff) return { charset: 'utf-16be', skip: 2 };
  const declared = declaredCharset(contentType);
  if (declared === 'utf-16' || declared === 'utf-16le' || declared === 'unicode')
    return { charset: 'utf-16le', skip: 0 };
  if (declared === 'utf-16be') return { charset: 'utf-16be', skip: 0 };
  if (declared === 'iso-8859-1' || declared === 'latin1' || declared === 'us-ascii')
    return { charset: 'latin1', skip: 0 };
  if (declared !== null && declared !== 'utf-8' && declared !== 'utf8') {
    return { charset: { label: declared }, skip: 0 };
  }
  return { charset: declared === null ? (looksLikeUtf16(bytes) ?? 'utf-8') : 'utf-8', skip: 0 };
}

function utf16(bytes: Uint8Array, bigEndian: boolean): string {
  let out = '';
  const whole = bytes.length - (bytes.length % 2);
  for (let i = 0; i < whole; i += 2) {
    out += String.fromCharCode(
      bigEndian ? (bytes[i]! << 8) | bytes[i + 1]! : bytes[i]! | (bytes[i + 1]! << 8),
    );
  }
  // A cut in the middle of a character: its byte, escaped.
  return whole < bytes.length ? out + hex(bytes[whole]!) : out;
}

function decode(bytes: Uint8Array, charset: Charset): string {
  if (charset === 'utf-8') return utf8OrEscaped(bytes);
  if (charset === 'utf-16le') return utf16(bytes, false);
  if (charset === 'utf-16be') return utf16(bytes, true);
  if (charset === 'latin1') return Buffer.from(bytes).toString('latin1');
  try {
    // windows-1252, shift_jis, …: what this Node's ICU knows; bytes it cannot map become U+FFFD.
    return new TextDecoder(charset.label).decode(bytes);
  } catch {
    return utf8OrEscaped(bytes);
  }
}

/**
 * The answer's first bytes as readable text: decoded by their byte-order mark, else the charset
 * the content-type names, else as UTF-8 (UTF-16 recognised by its zero bytes); bytes that are not
 * valid in it and control characters escaped; at most ANSWER_CHARS characters.
 */
export function answerText(bytes: Uint8Array, contentType: string | null): string {
  const { charset, skip } = charsetOf(bytes, contentType);
  return storableText(decode(bytes.subarray(skip), charset).trim(), ANSWER_CHARS);
}

/**
 * The answer's headers, one `name: value` a line. HTTP carries header values as bytes (fetch
 * hands them over one byte a character): a value that is valid UTF-8 is shown as such (`café`),
 * other bytes escaped; bounded in count, per value and in all.
 */
export function headersText(headers: Iterable<readonly [string, string]>): string {
  const lines: string[] = [];
  let count = 0;
  for (const [name, value] of headers) {
    count += 1;
    if (lines.length >= HEADER_COUNT) continue;
    const readable = utf8OrEscaped(Buffer.from(value, 'latin1'));
    lines.push(`${storableText(name, 100)}: ${storableText(readable, HEADER_VALUE_CHARS)}`);
  }
  if (count > HEADER_COUNT) lines.push(`… ${count - HEADER_COUNT} more header(s)`);
  return storableText(lines.join('\n'), HEADER_CHARS);
}

/** An error text as stored: escaped and bounded. */
export function storableError(text: string): string {
  return storableText(text, ERROR_CHARS);
}
