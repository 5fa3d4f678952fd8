import type { Request, Response } from 'express';
import { type AuditRow, listActions } from '../../core/audit/audit.ts';
import type { ConsoleContext } from '../context.ts';
import { consolePath, type Html, html } from '../html/html.ts';
import { formatTime, layout } from '../html/layout.ts';
import { sendPage } from '../html/respond.ts';
import { visible } from '../html/visible-text.ts';
import { viewerOf } from '../security/viewer.ts';
import { queryFailure } from './errors.ts';
import { parsePointInTime } from './events-query.ts';
import { decodeTimeId, encodeTimeId, queryText } from './keyset.ts';

// /audit: the operators' audit trail, the same read as `hookgate audit` (listActions in
// services/core/audit/audit.ts: audit_at_idx, or audit_endpoint_at_idx with an endpoint).

function describe(filters: Record<string, unknown>): string {
  const line = Object.entries(filters)
    .map(([key, value]) => `${key}=${Array.isArray(value) ? value.join(',') : String(value)}`)
    .join(' ');
  return line.length > 120 ? `${line.slice(0, 119)}…` : line;
}

function row(entry: AuditRow): Html {
  return html`<tr>
  <td class="mono">${formatTime(entry.at)}</td>
  <td class="actor">${visible(entry.actor)}</td>
  <td class="mono command">${visible(entry.command)}</td>
  <td>${visible(entry.endpoint ?? '-')}</td>
  <td>${entry.count}</td>
  <td class="kind">${entry.dry_run ? 'dry run' : 'run'}</td>
  <td class="mono">${visible(describe(entry.filters))}</td>
  <td class="reason">${visible(entry.reason ?? '')}</td>
</tr>`;
}

export async function auditPage(context: ConsoleContext, req: Request, res: Response): Promise<void> {
  const viewer = viewerOf(req);
  const fields = {
    since: queryText(req.query.since, 40),
    endpoint: queryText(req.query.endpoint, 63),
    actor: queryText(req.query.actor, 200),
    command: queryText(req.query.command, 63),
  };
  const before = decodeTimeId(req.query.before);
  const frame = (body: Html, status = 200) =>
    sendPage(
      res,
      layout(
        { title: 'Audit', viewer, current: 'audit', demo: context.demo },
        html`<h1>Audit trail</h1>
<form class="filters" method="get" action="/audit" role="search">
  <label>Since<input name="since" value="${fields.since}" placeholder="2h or 2026-11-30T02:00Z"></label>
  <label>Endpoint<select name="endpoint"><option value="">any</option>${context.endpoints.map(
    (name) =>
      html`<option value="${name}"${name === fields.endpoint ? html` selected` : ''}>${name}</option>`,
  )}</select></label>
  <label>Actor<input name="actor" value="${fields.actor}" placeholder="console:alice"></label>
  <label>Action<input name="command" value="${fields.command}" placeholder="quarantine drop"></label>
  <button type="submit">Filter</button>
  <a class="button secondary" href="/audit">Clear</a>
</form>
${body}`,
      ),
      status,
    );
  const since = fields.since ? parsePointInTime(fields.since, Date.now()) : undefined;
  if (since === null) {
    frame(
      html`<div class="error">Since must be a duration ago (2h) or a timestamp (2026-11-30T02:00:00Z), between 0001-01-01 and 9999-12-31.</div>`,
      400,
    );
    return;
  }
  if (fields.endpoint && !context.endpoints.includes(fields.endpoint)) {
    frame(html`<div class="error">No endpoint named ${visible(fields.endpoint)} is configured.</div>`, 400);
    return;
  }
  try {
    const rows = await listActions(context.pool, {
      since,
      endpoint: fields.endpoint || undefined,
      actor: fields.actor || undefined,
      command: fields.command || undefined,
      before,
      limit: context.limits.pageSize,
    });
    const last = rows.at(-1);
    // A relative "since" is kept as the time it meant, so paging stays in one window.
    const shown = {
      since: since ? since.toISOString() : undefined,
      endpoint: fields.endpoint || undefined,
      actor: fields.actor || undefined,
      command: fields.command || undefined,
    };
    frame(html`<p class="muted">${rows.length} action(s) on this page, newest first.</p>
${
  rows.length > 0
    ? html`<table class="events audit">
<thead><tr><th>At (UTC)</th><th>Actor</th><th>Action</th><th>Endpoint</th><th>Count</th><th>Kind</th><th>Asked for</th><th>Reason</th></tr></thead>
<tbody>${rows.map(row)}</tbody>
</table>`
    : html`<p>No operator action matches.</p>`
}
<div class="pager">${
      last && rows.length === context.limits.pageSize
        ? html`<a class="button secondary" rel="next" href="${consolePath(['audit'], { ...shown, before: encodeTimeId(last.at_key ?? last.at.toISOString(), last.id) })}">Older →</a>`
        : html`<span class="muted">End of the results.</span>`
    }${before ? html` <a href="${consolePath(['audit'], shown)}">Newest</a>` : ''}</div>`);
  } catch (error) {
    const failure = queryFailure(error, context);
    frame(html`<div class="error">${failure.message}</div>`, failure.status);
  }
}
