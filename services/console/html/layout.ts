import type { Viewer } from '../security/viewer.ts';
import { type Html, html } from './html.ts';

export interface PageOptions {
  readonly title: string;
  readonly viewer: Viewer | null;
  readonly current?: 'overview' | 'events' | 'destinations' | 'quarantine' | 'audit';
  readonly demo?: boolean;
  readonly notice?: string | null;
}

/** The frame of every page: no script, one stylesheet, a form to sign out. */
export function layout(options: PageOptions, body: Html): Html {
  const nav = (id: NonNullable<PageOptions['current']>, href: string, label: string) =>
    html`<a href="${href}"${options.current === id ? html` aria-current="page"` : ''}>${label}</a>`;
  const viewer = options.viewer;
  return html`<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="same-origin">
<title>${options.title} · hookgate</title>
<link rel="stylesheet" href="/assets/console.css">
</head>
<body>
<header class="top">
  <span class="brand">hookgate</span>
  ${
    // Signed out (the sign-in page), every link would only lead back to it.
    viewer
      ? html`<nav>${nav('overview', '/', 'Overview')}${nav('events', '/events', 'Events')}${nav('destinations', '/destinations', 'Destinations')}${nav('quarantine', '/quarantine', 'Quarantine')}${nav('audit', '/audit', 'Audit')}</nav>`
      : ''
  }
  ${
    viewer
      ? html`<div class="who">
    ${options.demo ? html`<span class="demo" title="embedded demo database on loopback: no sign-in">demo</span>` : ''}
    <span class="user">${viewer.name}</span>${viewer.role === 'viewer' ? html` <span class="role" title="a viewer reads; only an operator takes actions">viewer</span>` : ''}
    ${
      viewer.via === 'password'
        ? html`<form method="post" action="/logout" class="inline"><input type="hidden" name="_csrf" value="${viewer.csrf}"><button type="submit" class="link">Sign out</button></form>`
        : ''
    }
  </div>`
      : ''
  }
</header>
<main>
${options.notice ? html`<p class="notice" role="status">${options.notice}</p>` : ''}
${body}
</main>
</body>
</html>`;
}

export function formatTime(at: Date | null | undefined): string {
  if (!at) return '-';
  return at
    .toISOString()
    .replace('T', ' ')
    .replace(/\.(\d{3})Z$/, '.$1Z');
}

/** A measured duration an operator reads at a glance: `0.42 ms`, `20.3 ms`, `1.25 s`. */
export function formatMs(ms: number): string {
  if (!Number.isFinite(ms)) return '-';
  if (ms < 1) return `${ms.toFixed(2)} ms`;
  if (ms < 1000) return `${ms.toFixed(ms < 100 ? 1 : 0)} ms`;
  return `${(ms / 1000).toFixed(2)} s`;
}

export function formatAge(seconds: number | null | undefined): string {
  if (seconds === null || seconds === undefined || !Number.isFinite(seconds)) return '-';
  if (seconds < 1) return `${Math.round(seconds * 1000)}ms`;
  if (seconds < 120) return `${seconds.toFixed(seconds < 10 ? 1 : 0)}s`;
  if (seconds < 7_200)
    return `${Math.floor(seconds / 60)}m${String(Math.floor(seconds % 60)).padStart(2, '0')}s`;
  if (seconds < 172_800)
    return `${Math.floor(seconds / 3_600)}h${String(Math.floor((seconds % 3_600) / 60)).padStart(2, '0')}m`;
  return `${Math.floor(seconds / 86_400)}d`;
}
