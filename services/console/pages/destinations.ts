import type { Request, Response } from 'express';
import { destinationStats } from '../../core/destinations/actions.ts';
import { destinationLabel } from '../../core/destinations/routes.ts';
import { type DestinationState, destinationStates } from '../../core/destinations/state.ts';
import type { DestinationStatsRow } from '../../core/read-models/destinations-sql.ts';
import type { ConsoleContext } from '../context.ts';
import { type Html, html } from '../html/html.ts';
import { formatAge, formatTime, layout } from '../html/layout.ts';
import { sendPage } from '../html/respond.ts';
import { visible } from '../html/visible-text.ts';
import { canAct } from '../security/roles.ts';
import { viewerOf } from '../security/viewer.ts';
import { queryFailure } from './errors.ts';

// /destinations: each configured destination's state, breaker and deliveries, the same figures
// as `hookgate stats`' destinations table (destinationStats: the deliveries' partial indexes),
// with pause, resume and redeliver through the CLI's functions.

const HOUR_MS = 3_600_000;
const BREAKER_TONE: Readonly<Record<string, string>> = {
  closed: 'status-processed',
  half_open: 'status-pending',
  open: 'status-dead',
};

function actionForm(
  id: string,
  csrf: string,
  row: DestinationStatsRow,
  label: string,
  extra: Html | '' = '',
) {
  return html`<form method="post" action="/actions/${id}/preview" class="inline">
    <input type="hidden" name="_csrf" value="${csrf}">
    <input type="hidden" name="endpoint" value="${row.endpoint}">
    <input type="hidden" name="destination" value="${row.destination}">
    ${extra}<button type="submit" class="secondary">${label}</button>
  </form>`;
}

function destinationRow(
  row: DestinationStatsRow,
  label: string,
  state: DestinationState | undefined,
  csrf: string,
  offered: ReadonlySet<string>,
): Html {
  const paused = state?.paused === true;
  const controls = [
    paused && offered.has('destination-resume') ? actionForm('destination-resume', csrf, row, 'Resume…') : '',
    !paused && offered.has('destination-pause')
      ? actionForm(
          'destination-pause',
          csrf,
          row,
          'Pause…',
          html`<input type="text" name="reason" maxlength="1000" placeholder="why (optional)" aria-label="Reason to pause ${row.endpoint}/${row.destination}">`,
        )
      : '',
    row.dead > 0 && offered.has('redeliver') ? actionForm('redeliver', csrf, row, 'Redeliver dead…') : '',
  ];
  return html`<tr aria-label="${row.endpoint}/${row.destination}">
  <td>${visible(row.endpoint)}</td>
  <td class="mono">${visible(label)}</td>
  <td>${
    paused
      ? html`<span class="status status-parked">paused</span> <span class="muted">since ${formatTime(state?.changed_at)} by ${visible(state?.changed_by ?? '-')}${state?.reason ? html`: ${visible(state.reason)}` : ''}</span>`
      : html`<span class="status status-processed">active</span>`
  }</td>
  <td><span class="status ${BREAKER_TONE[row.breaker] ?? 'status-dead'}">${visible(row.breaker)}</span></td>
  <td>${row.waiting}</td>
  <td>${row.held}</td>
  <td>${row.dead > 0 ? html`<span class="status status-dead">${row.dead}</span>` : row.dead}</td>
  <td>${row.delivered}</td>
  <td>${formatAge(row.p99_seconds)}</td>
  <td class="actions">${controls}</td>
</tr>`;
}

export async function destinationsPage(context: ConsoleContext, req: Request, res: Response): Promise<void> {
  const viewer = viewerOf(req);
  const frame = (body: Html, status = 200) =>
    sendPage(
      res,
      layout({ title: 'Destinations', viewer, current: 'destinations', demo: context.demo }, body),
      status,
    );
  try {
    const since = new Date(Date.now() - HOUR_MS);
    const rows = await destinationStats(context.pool, context.config, since, null);
    const states = new Map(
      (await destinationStates(context.pool, rows)).map((state) => [
        `${state.endpoint}/${state.destination}`,
        state,
      ]),
    );
    const offered = new Set(
      ['destination-pause', 'destination-resume', 'redeliver'].filter(
        (id) => canAct(viewer) && context.actions.get(id),
      ),
    );
    frame(html`<h1>Destinations</h1>
<p class="muted">Waiting, held and dead now; delivered and the delivery p99 since ${formatTime(since)}.</p>
${
  rows.length === 0
    ? html`<p class="muted">No destination is configured (endpoints.&lt;name&gt;.destinations) and none has deliveries.</p>`
    : html`<table class="events"><thead><tr><th>Endpoint</th><th>Destination</th><th>State</th><th>Breaker</th><th>Waiting</th><th>Held</th><th>Dead</th><th>Delivered (1h)</th><th>p99 (1h)</th><th></th></tr></thead><tbody>${rows.map(
        (row) =>
          destinationRow(
            row,
            destinationLabel(context.config, row.endpoint, row.destination),
            states.get(`${row.endpoint}/${row.destination}`),
            viewer.csrf,
            offered,
          ),
      )}</tbody></table>`
}`);
  } catch (error) {
    const failure = queryFailure(error, context);
    frame(html`<h1>Destinations</h1><div class="error">${failure.message}</div>`, failure.status);
  }
}
