import { describe, expect, it } from 'vitest';
import { html } from '../../../services/console/html/html.ts';
import { formatMs, layout } from '../../../services/console/html/layout.ts';
import type { Viewer } from '../../../services/console/security/viewer.ts';

describe('the console frame', () => {
  it('shows the navigation to a signed-in viewer only, not on the sign-in page', () => {
    const signedOut = layout({ title: 'Sign in', viewer: null }, html`<p>form</p>`).text;
    expect(signedOut).not.toContain('<nav>');
    const viewer = { name: 'alice', via: 'password', csrf: 'x' } as unknown as Viewer;
    const signedIn = layout({ title: 'Overview', viewer, current: 'overview' }, html`<p>page</p>`).text;
    expect(signedIn).toContain('<nav>');
    expect(signedIn).toContain('href="/destinations"');
  });

  it('shows measured durations rounded to what a person reads', () => {
    expect(formatMs(20.277692)).toBe('20.3 ms');
    expect(formatMs(0.4217)).toBe('0.42 ms');
    expect(formatMs(152.9)).toBe('153 ms');
    expect(formatMs(1250)).toBe('1.25 s');
  });
});
