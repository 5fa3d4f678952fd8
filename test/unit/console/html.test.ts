import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { consolePath, escapeHtml, html } from '../../../services/console/html/html.ts';
import { visible, visibleBlock } from '../../../services/console/html/visible-text.ts';

describe('the console page template', () => {
  it('escapes every interpolated string, in text and in attributes', () => {
    const value = `<script>alert("x")</script>' onmouseover='x' \`y\` &amp;`;
    const out = html`<a title="${value}">${value}</a>`.text;
    expect(out).toBe(
      '<a title="&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;&#39; onmouseover=&#39;x&#39; &#96;y&#96; &amp;amp;">&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;&#39; onmouseover=&#39;x&#39; &#96;y&#96; &amp;amp;</a>',
    );
  });

  it('no string, however made, adds markup: its characters come back as text', () => {
    fc.assert(
      fc.property(fc.string({ unit: 'binary' }), (value) => {
        const out = html`${value}`.text;
        expect(out).toBe(escapeHtml(value));
        // No <, >, quotes or backticks (nothing to open a tag or close an attribute), no bare &.
        expect(out.replace(/&(amp|lt|gt|quot|#39|#96);/g, '')).not.toMatch(/[<>"'`&]/);
        const decode = (text: string) =>
          text
            .replace(/&lt;/g, '<')
            .replace(/&gt;/g, '>')
            .replace(/&quot;/g, '"')
            .replace(/&#39;/g, "'")
            .replace(/&#96;/g, '`')
            .replace(/&amp;/g, '&');
        expect(decode(escapeHtml(value))).toBe(value);
      }),
    );
  });

  it('nests its own fragments unescaped and arrays of them, and drops null, undefined and false', () => {
    const items = ['a<b', 'c'].map((item) => html`<li>${item}</li>`);
    expect(html`<ul>${items}${null}${undefined}${false}</ul>`.text).toBe(
      '<ul><li>a&lt;b</li><li>c</li></ul>',
    );
  });

  it('an object that only looks like a fragment is escaped as text', () => {
    const forged = { text: '<script>x</script>' } as unknown as string;
    expect(html`${forged}`.text).toBe('[object Object]');
  });

  it('builds console paths whose segments cannot change scheme, host or path', () => {
    expect(consolePath(['events', 'shop', 'javascript:alert(1)'])).toBe('/events/shop/javascript%3Aalert(1)');
    expect(consolePath(['events', '//evil.example', '../x'])).toBe('/events/%2F%2Fevil.example/..%2Fx');
    expect(consolePath(['events'], { endpoint: 'a&b', after: undefined, type: '' })).toBe(
      '/events?endpoint=a%26b',
    );
  });

  it('shows controls, bidirectional overrides and invisible characters as marked escapes', () => {
    expect(visible('a\u001b[31mb\u202ec\u200bd\n').text).toBe(
      'a<span class="ctl">\\x1b</span>[31mb<span class="ctl">\\u202e</span>c<span class="ctl">\\u200b</span>d<span class="ctl">\\n</span>',
    );
    expect(visibleBlock('line 1\nline\u009b2 <b>').text).toBe(
      'line 1\nline<span class="ctl">\\x9b</span>2 &lt;b&gt;',
    );
  });
});
