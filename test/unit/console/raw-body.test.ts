import { describe, expect, it } from 'vitest';
import { BODY_SHOWN_BYTES, rawBody } from '../../../services/console/pages/raw-body.ts';

describe("the console's view of a quarantined body", () => {
  it('shows UTF-8 as escaped text with controls marked, never as markup', () => {
    const shown = rawBody(Buffer.from('{"a":"<script>alert(1)</script>\u009b\u202e"}\n', 'utf8'));
    expect(shown.kind).toBe('text');
    expect(shown.markup.text).toContain('&lt;script&gt;alert(1)&lt;/script&gt;');
    expect(shown.markup.text).not.toContain('<script>');
    expect(shown.markup.text).toContain('<span class="ctl">\\x9b</span><span class="ctl">\\u202e</span>');
  });

  it('shows bytes that are not UTF-8 as a hex dump, terminal escapes included', () => {
    const shown = rawBody(Buffer.from([0xff, 0x1b, 0x5b, 0x33, 0x31, 0x6d, 0x3c, 0x62, 0x3e]));
    expect(shown.kind).toBe('hex');
    expect(shown.markup.text).toContain('00000000  ff 1b 5b 33 31 6d 3c 62 3e');
    // The ASCII column escapes `<` too (it is text in a <pre>).
    expect(shown.markup.text).toContain('..[31m&lt;b&gt;');
    expect(shown.markup.text).not.toContain('\u001b');
  });

  it('shows at most BODY_SHOWN_BYTES, and a character cut at that bound is not taken for binary', () => {
    const body = Buffer.from(`${'a'.repeat(BODY_SHOWN_BYTES - 1)}é and more`, 'utf8');
    const shown = rawBody(body);
    expect(shown.kind).toBe('text');
    expect(shown.markup.text).not.toContain('and more');
    expect(shown.markup.text.length).toBeLessThan(BODY_SHOWN_BYTES + 100);
  });
});
