import type { Request, Response } from 'express';
import type { ConsoleContext } from '../context.ts';
import { consolePath, html } from '../html/html.ts';
import { formatTime, layout } from '../html/layout.ts';
import { sendPage } from '../html/respond.ts';
import { visible } from '../html/visible-text.ts';
import {
  type EventPage,
  type EventRow,
  type SearchPath,
  STATUSES,
  searchEvents,
} from '../read-models/events.ts';
import { canAct } from '../security/roles.ts';
import { type Viewer, viewerOf } from '../security/viewer.ts';
import { queryFailure } from './errors.ts';
import { type EventsQuery, encodeCursor, parseEventsQuery, readQuery } from './events-query.ts';

const PATH_NOTE: Readonly<Record<SearchPath, string>> = {
  'event-id': 'by event id (primary key)',
  entity: 'by entity id (entity index)',
  containment: 'by payload containment (GIN index)',
  pending: 'by status (its partial index, per endpoint)',
  parked: 'by status (its partial index, per endpoint)',
  dead: 'by status (its partial index, per endpoint)',
  time: 'newest first (received-at index)',
};

/** The endpoints whose payloads the console's payload index holds (`payloadSearch`). */
function payloadSearchEndpoints(config: ConsoleContext['config']): string[] {
  return Object.entries(config.endpoints)
    .filter(([, endpoint]) => endpoint.payloadSearch)
    .map(([name]) => name);
}

export function statusBadge(status: string) {
  return html`<span class="status status-${STATUSES.includes(status as never) ? status : 'unknown'}">${status}</span>`;
}

function row(event: EventRow) {
  const href = consolePath(['events', event.endpoint, event.event_id]);
  return html`<tr>
  <td class="mono">${formatTime(event.received_at)}</td>
  <td>${visible(event.endpoint)}</td>
  <td class="id"><a href="${href}">${visible(event.event_id)}</a></td>
  <td>${visible(event.event_type)}</td>
  <td>${statusBadge(event.status)}</td>
  <td>${event.attempts}</td>
  <td class="id">${visible(event.entity_id ?? '')}</td>
  <td class="mono">${visible(event.last_error ?? '')}</td>
</tr>`;
}

function filtersForm(query: EventsQuery, endpoints: readonly string[]) {
  const option = (value: string, selected: string, label = value) =>
    html`<option value="${value}"${value === selected ? html` selected` : ''}>${label}</option>`;
  return html`<form class="filters" method="get" action="/events" role="search">
  <label>Endpoint<select name="endpoint">${option('', query.endpoint, 'any')}${endpoints.map((name) => option(name, query.endpoint))}</select></label>
  <label>Status<select name="status">${option('', query.status, 'any')}${STATUSES.map((status) => option(status, query.status))}</select></label>
  <label>Type<input name="type" value="${query.type}" placeholder="invoice.paid"></label>
  <label>From<input name="since" value="${query.since}" placeholder="2h or 2026-11-30T02:00Z"></label>
  <label>Until<input name="until" value="${query.until}" placeholder="10m or a time"></label>
  <label>Event id<input name="event_id" value="${query.event_id}" class="wide" placeholder="evt_…"></label>
  <label>Entity id<input name="entity_id" value="${query.entity_id}" placeholder="cus_…"></label>
  <label>Payload contains (JSON)<input name="contains" value="${query.contains}" class="wide" placeholder='{"data":{"object":{"customer":"cus_…"}}}'></label>
  <button type="submit">Search</button>
  <a class="button secondary" href="/events">Clear</a>
</form>`;
}

function pager(query: EventsQuery, page: EventPage) {
  if (!page.next) return html`<div class="pager"><span class="muted">End of the results.</span></div>`;
  const next = consolePath(['events'], { ...query, after: encodeCursor(page.next) });
  const label = page.readBackTo ? 'Search further back' : 'Older';
  return html`<div class="pager">
  ${page.readBackTo ? html`<span class="muted">Read the events received down to ${formatTime(page.readBackTo)} for this page (console.scanRows); there may be more matches before.</span>` : ''}
  <a class="button secondary" rel="next" href="${next}">${label} →</a>
  ${query.after ? html`<a href="${consolePath(['events'], { ...query, after: undefined })}">Newest</a>` : ''}
</div>`;
}

/** Bulk requeue of what the filters show, when they name one endpoint and a parked/dead status. */
function bulkActions(context: ConsoleContext, query: EventsQuery, viewer: Viewer) {
  if (
    !query.endpoint ||
    (query.status !== 'dead' && query.status !== 'parked') ||
    query.event_id ||
    query.entity_id ||
    query.contains
  )
    return '';
  if (!canAct(viewer) || !context.actions.get('requeue')) return '';
  return html`<form method="post" action="/actions/requeue/preview" class="actions">
  <input type="hidden" name="_csrf" value="${viewer.csrf}">
  <input type="hidden" name="endpoint" value="${query.endpoint}">
  <input type="hidden" name="status" value="${query.status}">
  ${query.type ? html`<input type="hidden" name="type" value="${query.type}">` : ''}
  <button type="submit" class="secondary">Requeue every ${query.status} event of ${query.endpoint}${query.type ? html` of type ${query.type}` : ''}…</button>
</form>`;
}

export async function eventsPage(context: ConsoleContext, req: Request, res: Response): Promise<void> {
  const viewer = viewerOf(req);
  const query = readQuery(req.query as Record<string, unknown>);
  const { search, problems } = parseEventsQuery(query, context.endpoints, Date.now());
  // The time fields as the database was asked them, so a relative "2h" stays the same window when paging.
  const shown: EventsQuery = {
    ...query,
    since:
      search.since && query.since && !/^\d{4}-/.test(query.since) ? search.since.toISOString() : query.since,
    until:
      search.until && query.until && !/^\d{4}-/.test(query.until) ? search.until.toISOString() : query.until,
  };
  let body: ReturnType<typeof html>;
  if (problems.length > 0) {
    res.status(400);
    body = html`<div class="error">${problems.map((problem) => html`<div>${problem}</div>`)}</div>`;
  } else {
    try {
      const page = await searchEvents(
        context.pool,
        search,
        context.endpoints,
        context.limits,
        payloadSearchEndpoints(context.config),
      );
      const unindexed =
        search.contains !== undefined && page.path !== 'containment'
          ? html` The payload is matched among the rows read: not every endpoint searched has <code>payloadSearch</code> on.`
          : '';
      body = html`<p class="muted">${page.rows.length} event(s) on this page, ${PATH_NOTE[page.path]}.${unindexed}</p>
${
  page.rows.length > 0
    ? html`<table class="events">
<thead><tr><th>Received (UTC)</th><th>Endpoint</th><th>Event id</th><th>Type</th><th>Status</th><th>Attempts</th><th>Entity</th><th>Last error</th></tr></thead>
<tbody>${page.rows.map(row)}</tbody>
</table>`
    : html`<p>No event matches.</p>`
}
${pager(shown, page)}`;
    } catch (error) {
      const failure = queryFailure(error, context);
      res.status(failure.status);
      body = html`<div class="error">${failure.message}</div>`;
    }
  }
  sendPage(
    res,
    layout(
      { title: 'Events', viewer, current: 'events', demo: context.demo },
      html`<h1>Events</h1>
${filtersForm(query, context.endpoints)}
${bulkActions(context, query, viewer)}
${body}`,
    ),
    res.statusCode,
  );
}
