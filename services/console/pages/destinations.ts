import type { Request, Response } from 'express';
import { destinationStats } from '../../core/destinations/actions.ts';
import { destinationStates } from '../../core/destinations/state.ts';
import type { ConsoleContext } from '../context.ts';
import { html } from '../html/html.ts';
import { formatAge, formatTime, layout } from '../html/layout.ts';
import { sendPage } from '../html/respond.ts';
import { visible } from '../html/visible-text.ts';
import { viewerOf } from '../security/viewer.ts';
import { queryFailure } from './errors.ts';

const HOUR_MS = 3_600_000;

function control(action: string, endpoint: string, destination: string, csrf: string, label: string) {
  return html`<form method="post" action="/actions/${action}/preview" class="inline">
    <input type="hidden" name="_csrf" value="${csrf}">
    <input type="hidden" name="endpoint" value="${endpoint}">
    <input type="hidden" name="destination" value="${destination}">
    <button type="submit" class="secondary">${label}</button>
  </form>`;
}

/**
 * Every destination: pause state, breaker, what waits, held, dead, delivered in the last hour and
 * its p99 — the same read as `hookgate stats`' destinations table (no inbox scan).
 */
export async function destinationsPage(context: ConsoleContext, req: Request, res: Response): Promise<void> {
  const viewer = viewerOf(req);
  const frame = (body: ReturnType<typeof html>, status?: number) =>
    sendPage(
      res,
      layout({ title: 'Destinations', viewer, current: 'destinations', demo: context.demo }, body),
      status,
    );
  try {
    const since = new Date(Date.now() - HOUR_MS);
    const rows = await destinationStats(context.pool, context.config, since, null);
    const states = new Map(
      (await destinationStates(context.pool)).map((row) => [`${row.endpoint}/${row.destination}`, row]),
    );
    const offered =
      context.actions.get('destination-pause') !== undefined &&
      context.actions.get('destination-resume') !== undefined;
    const body = rows.map((row) => {
      const state = states.get(`${row.endpoint}/${row.destination}`);
      const paused = state?.paused === true;
      const stateCell = paused
        ? html`<strong>paused</strong> since ${formatTime(state.changed_at)} by ${visible(state.changed_by)}`
        : html`active`;
      const action = offered
        ? paused
          ? control('destination-resume', row.endpoint, row.destination, viewer.csrf, 'Resume…')
          : control('destination-pause', row.endpoint, row.destination, viewer.csrf, 'Pause…')
        : '';
      const again =
        row.dead > 0 && context.actions.get('redeliver') !== undefined
          ? control('redeliver', row.endpoint, row.destination, viewer.csrf, 'Redeliver dead…')
          : '';
      return html`<tr>
  <td>${visible(row.endpoint)}</td><td>${visible(row.destination)}</td>
  <td>${stateCell}</td><td>${row.breaker.replace('_', '-')}</td>
  <td>${row.waiting}</td><td>${row.held}</td><td${row.dead > 0 ? html` class="bad"` : ''}>${row.dead}</td>
  <td>${row.delivered}</td><td>${formatAge(row.p99_seconds)}</td><td>${action}${again}</td>
</tr>`;
    });
    frame(html`<h1>Destinations</h1>
<p class="muted">Waiting, held and dead now; delivered since ${formatTime(since)} with the p99 from written to delivered (the read behind <code>hookgate stats</code>).</p>
${
  rows.length === 0
    ? html`<p>No destinations are configured.</p>`
    : html`<table>
<thead><tr><th>Endpoint</th><th>Destination</th><th>State</th><th>Breaker</th><th>Waiting</th><th>Held</th><th>Dead</th><th>Delivered (1h)</th><th>p99</th><th></th></tr></thead>
<tbody>${body}</tbody>
</table>`
}`);
  } catch (error) {
    const failure = queryFailure(error, context);
    frame(html`<h1>Destinations</h1><div class="error">${failure.message}</div>`, failure.status);
  }
}
