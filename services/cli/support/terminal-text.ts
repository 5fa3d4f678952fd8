/**
 * What the CLI prints comes partly from senders: event types, ids, last errors, headers,
 * provider API answers. A terminal acts on control characters (ESC starts sequences that
 * recolour, retitle or rewrite the screen; CR and newlines forge lines), and the Unicode
 * bidirectional controls reorder what it shows. Every text the CLI prints passes through here:
 * such characters are printed as escapes (`\x1b`, `\n`, `\u202e`), everything else as it is.
 * A backslash is not escaped, so `\x1b` on screen may also be those four characters; the JSON
 * output (`--json`) is exact.
 */

// C0 controls (tab and newline included), DEL, C1 controls, the bidirectional marks, embeddings,
// overrides and isolates, the line and paragraph separators, and the invisible zero-width space,
// word joiner and byte-order mark (so look-alike ids look different); the second leaves out the
// newline. The zero-width joiners of emoji and scripts stay as they are.
const CONTROLS =
  '\\u0000-\\u001f\\u007f-\\u009f\\u061c\\u200b\\u200e\\u200f\\u2028\\u2029\\u202a-\\u202e\\u2060\\u2066-\\u2069\\ufeff';
const UNSAFE = new RegExp(`[${CONTROLS}]`, 'g');
const UNSAFE_BUT_NEWLINE = new RegExp(`(?!\\n)[${CONTROLS}]`, 'g');

const NAMED: Readonly<Record<string, string>> = { '\n': '\\n', '\r': '\\r', '\t': '\\t' };

function escaped(char: string): string {
  const named = NAMED[char];
  if (named) return named;
  const code = char.charCodeAt(0);
  return code <= 0xff
    ? `\\x${code.toString(16).padStart(2, '0')}`
    : `\\u${code.toString(16).padStart(4, '0')}`;
}

/** One value (a table cell, a field): no character in it can act on the terminal, newlines included. */
export function terminalText(value: string): string {
  return value.replace(UNSAFE, escaped);
}

/** A block of lines the CLI composed: as terminalText, but its own newlines stay newlines. */
export function terminalLines(text: string): string {
  return text.replace(UNSAFE_BUT_NEWLINE, escaped);
}

/**
 * JSON text for stdout: JSON.stringify escapes C0 controls inside strings, not DEL, C1 or the
 * bidirectional controls, which are written as \u escapes here (outside strings JSON holds none
 * of them; the newlines of pretty-printing stay). The JSON is the same value.
 */
export function terminalJson(json: string): string {
  return json.replace(UNSAFE_BUT_NEWLINE, (char) => `\\u${char.charCodeAt(0).toString(16).padStart(4, '0')}`);
}

/** Results, on stdout. */
export function writeOut(text: string): void {
  process.stdout.write(terminalLines(text));
}

/** Messages and errors, on stderr. */
export function writeErr(text: string): void {
  process.stderr.write(terminalLines(text));
}
