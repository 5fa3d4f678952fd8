import type { Request, Response } from 'express';
import type { ConsoleContext } from '../context.ts';
import { consolePath, html } from '../html/html.ts';
import { formatAge, formatTime, layout } from '../html/layout.ts';
import { minuteChart } from '../html/minute-chart.ts';
import { sendPage } from '../html/respond.ts';
import { visible } from '../html/visible-text.ts';
import { type EndpointOverview, loadOverview } from '../read-models/overview.ts';
import { viewerOf } from '../security/viewer.ts';
import { queryFailure } from './errors.ts';

const percent = (rate: number | null) =>
  rate === null ? '-' : `${(rate * 100).toFixed(rate < 0.1 ? 2 : 1)}%`;

function figure(label: string, value: string | number, href?: string, tone?: 'bad' | 'warn') {
  const shown = href ? html`<a href="${href}">${value}</a>` : html`${value}`;
  return html`<div><span class="label">${label}</span><span class="value${tone ? html` ${tone}` : ''}">${shown}</span></div>`;
}

function card(endpoint: EndpointOverview, since: Date) {
  const list = (status?: string) => consolePath(['events'], { endpoint: endpoint.endpoint, status });
  const oldestTone =
    endpoint.oldestPendingSeconds !== null && endpoint.oldestPendingSeconds > 300 ? 'warn' : undefined;
  return html`<section class="card" aria-label="${endpoint.endpoint}">
  <h2><a href="${list()}">${visible(endpoint.endpoint)}</a></h2>
  <div class="muted">${endpoint.provider ?? 'not configured'}${endpoint.handler ? html` · ${endpoint.handler}` : ''}${endpoint.mode ? html` · ${endpoint.mode}` : ''}</div>
  <div class="figures">
    ${figure('Pending', endpoint.pending, list('pending'))}
    ${figure('Oldest pending', formatAge(endpoint.oldestPendingSeconds), undefined, oldestTone)}
    ${figure('Parked', endpoint.parked, list('parked'), endpoint.parked > 0 ? 'warn' : undefined)}
    ${figure('Dead', endpoint.dead, list('dead'), endpoint.dead > 0 ? 'bad' : undefined)}
    ${figure('Accepted (1h)', endpoint.accepted)}
    ${figure('Duplicates (1h)', endpoint.duplicate)}
    ${figure('Duplicate rate', percent(endpoint.duplicateRate))}
    ${figure('p50 / p99', `${formatAge(endpoint.latency.p50)} / ${formatAge(endpoint.latency.p99)}`)}
  </div>
  ${minuteChart(endpoint.minutes, since, `Deliveries per minute to ${endpoint.endpoint} over the last hour`)}
  <div class="legend">last 60 minutes<span class="swatch accepted"></span>accepted<span class="swatch duplicate"></span>duplicate · latency from ${endpoint.latency.sample} settled event(s)</div>
</section>`;
}

export async function overviewPage(context: ConsoleContext, req: Request, res: Response): Promise<void> {
  const viewer = viewerOf(req);
  try {
    const overview = await loadOverview(context.pool, context.endpointInfo, context.latencySample);
    sendPage(
      res,
      layout(
        { title: 'Overview', viewer, current: 'overview', demo: context.demo },
        html`<h1>Overview</h1>
<p class="muted">Backlog now; deliveries from ${formatTime(overview.since)} to ${formatTime(overview.until)}; received → processed latency over the newest ${overview.sampleLimit} events of that hour (console.latencySample).</p>
<div class="cards">${overview.endpoints.map((endpoint) => card(endpoint, overview.since))}</div>`,
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
