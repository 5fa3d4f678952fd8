import { type Html, html } from '../html/html.ts';
import { visibleBlock } from '../html/visible-text.ts';

/** Most bytes of a quarantined body the page shows (bodies are up to the endpoint's body limit). */
export const BODY_SHOWN_BYTES = 64 * 1024;

const UTF8 = new TextDecoder('utf-8', { fatal: true });

/**
 * A quarantined body as text, never interpreted: valid UTF-8 is shown through visibleBlock
 * (escaped, every control shown as its escape); anything else as a hex dump with the printable
 * ASCII beside it. Bounded to BODY_SHOWN_BYTES.
 */
export function rawBody(body: Buffer): { readonly kind: 'text' | 'hex'; readonly markup: Html } {
  const shown = body.subarray(0, BODY_SHOWN_BYTES);
  let text = tryDecode(shown);
  // A multi-byte character cut at the bound is not binary: trim up to three bytes for it.
  for (let cut = 1; text === null && cut < 4 && shown.length < body.length; cut += 1)
    text = tryDecode(shown.subarray(0, shown.length - cut));
  if (text !== null)
    return { kind: 'text', markup: html`<pre class="block raw">${visibleBlock(text)}</pre>` };
  const lines: string[] = [];
  for (let at = 0; at < shown.length; at += 16) {
    const chunk = shown.subarray(at, at + 16);
    const hex = [...chunk].map((byte) => byte.toString(16).padStart(2, '0')).join(' ');
    const ascii = [...chunk]
      .map((byte) => (byte >= 0x20 && byte < 0x7f ? String.fromCharCode(byte) : '.'))
      .join('');
    lines.push(`${at.toString(16).padStart(8, '0')}  ${hex.padEnd(47)}  ${ascii}`);
  }
  return { kind: 'hex', markup: html`<pre class="block raw hex">${lines.join('\n')}</pre>` };
}

function tryDecode(bytes: Uint8Array): string | null {
  try {
    return UTF8.decode(bytes);
  } catch {
    return null;
  }
}
