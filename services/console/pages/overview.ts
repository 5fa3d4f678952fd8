import type { Request, Response } from 'express';
import { type PauseState, pausedEndpoints } from '../../core/pause/pause.ts';
import { countHeld } from '../../core/quarantine/actions.ts';
import { type ReconcileState, readStates } from '../../core/reconcile/state-sql.ts';
import type { ConsoleContext } from '../context.ts';
import { consolePath, html } from '../html/html.ts';
import { formatAge, formatTime, layout } from '../html/layout.ts';
import { minuteChart } from '../html/minute-chart.ts';
import { sendPage } from '../html/respond.ts';
import { visible } from '../html/visible-text.ts';
import { type EndpointOverview, loadOverview } from '../read-models/overview.ts';
import { canAct } from '../security/roles.ts';
import { viewerOf } from '../security/viewer.ts';
import { queryFailure } from './errors.ts';

const percent = (rate: number | null) =>
  rate === null ? '-' : `${(rate * 100).toFixed(rate < 0.1 ? 2 : 1)}%`;

function figure(label: string, value: string | number, href?: string, tone?: 'bad' | 'warn') {
  const shown = href ? html`<a href="${href}">${value}</a>` : html`${value}`;
  return html`<div><span class="label">${label}</span><span class="value${tone ? html` ${tone}` : ''}">${shown}</span></div>`;
}

/** The endpoint's pause, and the form that changes it (when the console offers pause/resume). */
function pauseControl(endpoint: string, pause: PauseState | undefined, csrf: string, offered: boolean) {
  const state = pause
    ? html`<div class="paused"><strong>Paused</strong> since ${formatTime(pause.paused_at)} by ${visible(pause.paused_by)}${pause.pause_reason ? html`: ${visible(pause.pause_reason)}` : ''}</div>`
    : '';
  if (!offered) return state;
  const form = pause
    ? html`<form method="post" action="/actions/resume/preview" class="inline">
    <input type="hidden" name="_csrf" value="${csrf}">
    <input type="hidden" name="endpoint" value="${endpoint}">
    <button type="submit">Resume…</button>
  </form>`
    : html`<form method="post" action="/actions/pause/preview" class="inline">
    <input type="hidden" name="_csrf" value="${csrf}">
    <input type="hidden" name="endpoint" value="${endpoint}">
    <input type="text" name="reason" maxlength="1000" placeholder="why (optional)" aria-label="Reason to pause">
    <button type="submit" class="secondary">Pause…</button>
  </form>`;
  return html`${state}<div class="actions">${form}</div>`;
}

/** Where the endpoint reconciles against its provider: "every event it listed up to T is here". */
function gapFree(state: ReconcileState | undefined) {
  if (!state) return '';
  const until = state.watermark ? formatTime(state.watermark) : 'not yet';
  const tone = state.lastOutcome === 'failed' ? 'warn' : undefined;
  return figure('Gap-free until', until, undefined, tone);
}

function card(
  endpoint: EndpointOverview,
  since: Date,
  control: ReturnType<typeof html> | string,
  reconcile: ReconcileState | undefined,
  quarantined = 0,
) {
  const list = (status?: string) => consolePath(['events'], { endpoint: endpoint.endpoint, status });
  const oldestTone =
    endpoint.oldestPendingSeconds !== null && endpoint.oldestPendingSeconds > 300 ? 'warn' : undefined;
  return html`<section class="card" aria-label="${endpoint.endpoint}">
  <h2><a href="${list()}">${visible(endpoint.endpoint)}</a></h2>
  <div class="muted">${endpoint.provider ?? 'not configured'}${endpoint.handler ? html` · ${endpoint.handler}` : ''}${endpoint.mode ? html` · ${endpoint.mode}` : ''}</div>
  ${control}
  <div class="figures">
    ${figure('Pending', endpoint.pending, list('pending'))}
    ${figure('Oldest pending', formatAge(endpoint.oldestPendingSeconds), undefined, oldestTone)}
    ${figure('Parked', endpoint.parked, list('parked'), endpoint.parked > 0 ? 'warn' : undefined)}
    ${figure('Dead', endpoint.dead, list('dead'), endpoint.dead > 0 ? 'bad' : undefined)}
    ${figure('Accepted (1h)', endpoint.accepted)}
    ${figure('Duplicates (1h)', endpoint.duplicate)}
    ${figure('Duplicate rate', percent(endpoint.duplicateRate))}
    ${figure('p50 / p99', `${formatAge(endpoint.latency.p50)} / ${formatAge(endpoint.latency.p99)}`)}
    ${figure('Quarantined', quarantined, consolePath(['quarantine'], { endpoint: endpoint.endpoint }), quarantined > 0 ? 'warn' : undefined)}
    ${gapFree(reconcile)}
  </div>
  ${minuteChart(endpoint.minutes, since, `Deliveries per minute to ${endpoint.endpoint} over the last hour`)}
  <div class="legend">last 60 minutes<span class="swatch accepted"></span>accepted<span class="swatch duplicate"></span>duplicate · latency from ${endpoint.latency.sample} settled event(s)</div>
</section>`;
}

export async function overviewPage(context: ConsoleContext, req: Request, res: Response): Promise<void> {
  const viewer = viewerOf(req);
  try {
    const overview = await loadOverview(context.pool, context.endpointInfo, context.latencySample);
    const pauses = new Map((await pausedEndpoints(context.pool)).map((pause) => [pause.endpoint, pause]));
    const held = await countHeld(context.pool);
    const reconciled = new Map((await readStates(context.pool)).map((state) => [state.endpoint, state]));
    const offered =
      canAct(viewer) &&
      context.actions.get('pause') !== undefined &&
      context.actions.get('resume') !== undefined;
    sendPage(
      res,
      layout(
        { title: 'Overview', viewer, current: 'overview', demo: context.demo },
        html`<h1>Overview</h1>
<p class="muted">Backlog now; deliveries from ${formatTime(overview.since)} to ${formatTime(overview.until)}; received → processed latency over the newest ${overview.sampleLimit} events of that hour.</p>
<div class="cards">${overview.endpoints.map((endpoint) =>
          card(
            endpoint,
            overview.since,
            endpoint.provider
              ? pauseControl(endpoint.endpoint, pauses.get(endpoint.endpoint), viewer.csrf, offered)
              : '',
            reconciled.get(endpoint.endpoint),
            held[endpoint.endpoint] ?? 0,
          ),
        )}</div>`,
      ),
    );
  } catch (error) {
    const failure = queryFailure(error, context);
    sendPage(
      res,
      layout(
        { title: 'Overview', viewer, current: 'overview', demo: context.demo },
        html`<h1>Overview</h1><div class="error">${failure.message}</div>`,
      ),
      failure.status,
    );
  }
}
