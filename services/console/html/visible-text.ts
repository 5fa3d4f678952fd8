import { type Html, html } from './html.ts';

// C0 controls (tab and newline included), DEL, C1 controls, the bidirectional marks, embeddings,
// overrides and isolates, the line and paragraph separators, and the zero-width space, word
// joiner and byte-order mark: characters a browser either hides or lets reorder the text around
// them (an id with U+202E shows reversed; ESC sequences meant for a terminal are invisible). Each
// is shown as its escape (`\x1b`, `\u202e`) in a marked span, so what the page shows is what
// was sent, and two look-alike ids look different.
const CONTROLS =
  '\\u0000-\\u001f\\u007f-\\u009f\\u061c\\u200b\\u200e\\u200f\\u2028\\u2029\\u202a-\\u202e\\u2060\\u2066-\\u2069\\ufeff';
const UNSAFE = new RegExp(`[${CONTROLS}]`, 'g');
const UNSAFE_BUT_NEWLINE = new RegExp(`(?!\\n)[${CONTROLS}]`, 'g');
const NAMED: Readonly<Record<string, string>> = { '\n': '\\n', '\r': '\\r', '\t': '\\t' };

export function controlEscape(char: string): string {
  const named = NAMED[char];
  if (named) return named;
  const code = char.charCodeAt(0);
  return code <= 0xff
    ? `\\x${code.toString(16).padStart(2, '0')}`
    : `\\u${code.toString(16).padStart(4, '0')}`;
}

function marked(text: string, pattern: RegExp): Html {
  const parts: Html[] = [];
  let last = 0;
  for (const match of text.matchAll(pattern)) {
    const at = match.index;
    parts.push(html`${text.slice(last, at)}<span class="ctl">${controlEscape(match[0])}</span>`);
    last = at + match[0].length;
  }
  parts.push(html`${text.slice(last)}`);
  return html`${parts}`;
}

/** One value on one line (an id, a type, a header): every control shown as its escape. */
export function visible(text: string | null | undefined): Html {
  return marked(text ?? '', UNSAFE);
}

/** A block shown in <pre> (a payload, an error): its newlines stay, other controls are shown. */
export function visibleBlock(text: string | null | undefined): Html {
  return marked(text ?? '', UNSAFE_BUT_NEWLINE);
}
