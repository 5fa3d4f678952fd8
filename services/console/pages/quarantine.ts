import type { Request, Response } from 'express';
import { listHeldPage, type QuarantinedRow, showQuarantined } from '../../core/quarantine/actions.ts';
import type { ConsoleContext } from '../context.ts';
import { consolePath, type Html, html } from '../html/html.ts';
import { formatTime, layout } from '../html/layout.ts';
import { sendPage } from '../html/respond.ts';
import { visible } from '../html/visible-text.ts';
import { canAct } from '../security/roles.ts';
import { viewerOf } from '../security/viewer.ts';
import { queryFailure } from './errors.ts';
import { decodeTimeId, encodeTimeId, queryText } from './keyset.ts';
import { BODY_SHOWN_BYTES, rawBody } from './raw-body.ts';

// /quarantine: verified deliveries held because they cannot become events (DESIGN.md promise 8),
// read through services/core/quarantine/actions.ts (the functions behind `hookgate quarantine`).

function row(held: QuarantinedRow): Html {
  return html`<tr>
  <td class="mono">${formatTime(held.received_at)}</td>
  <td>${visible(held.endpoint)}</td>
  <td class="id"><a href="${consolePath(['quarantine', held.id])}">${held.id}</a></td>
  <td class="mono">${visible(held.reason)}</td>
  <td>${visible(held.message)}</td>
  <td>${held.body_bytes}</td>
</tr>`;
}

export async function quarantinePage(context: ConsoleContext, req: Request, res: Response): Promise<void> {
  const viewer = viewerOf(req);
  const endpoint = queryText(req.query.endpoint, 63);
  const reason = queryText(req.query.reason, 63);
  const before = decodeTimeId(req.query.before);
  const frame = (body: Html, status = 200) =>
    sendPage(
      res,
      layout(
        { title: 'Quarantine', viewer, current: 'quarantine', demo: context.demo },
        html`<h1>Quarantine</h1>
<p class="muted">Verified deliveries that could not become events (no usable id or type, a version or payload PostgreSQL cannot hold), acknowledged and held until released or dropped. Held ones only, newest first.</p>
<form class="filters" method="get" action="/quarantine" role="search">
  <label>Endpoint<select name="endpoint"><option value="">any</option>${context.endpoints.map(
    (name) => html`<option value="${name}"${name === endpoint ? html` selected` : ''}>${name}</option>`,
  )}</select></label>
  <label>Reason<input name="reason" value="${reason}" placeholder="event_type_missing"></label>
  <button type="submit">Filter</button>
  <a class="button secondary" href="/quarantine">Clear</a>
</form>
${body}`,
      ),
      status,
    );
  if (endpoint && !context.endpoints.includes(endpoint)) {
    frame(html`<div class="error">No endpoint named ${visible(endpoint)} is configured.</div>`, 400);
    return;
  }
  try {
    const rows = await listHeldPage(context.pool, {
      endpoint: endpoint || undefined,
      reason: reason || undefined,
      before: before ? { receivedAt: before.at, id: before.id } : undefined,
      limit: context.limits.pageSize,
    });
    const last = rows.at(-1);
    const filters = { endpoint: endpoint || undefined, reason: reason || undefined };
    frame(html`<p class="muted">${rows.length} held deliver${rows.length === 1 ? 'y' : 'ies'} on this page.</p>
${
  rows.length > 0
    ? html`<table class="events quarantine">
<thead><tr><th>Received (UTC)</th><th>Endpoint</th><th>Id</th><th>Reason</th><th>Why</th><th>Bytes</th></tr></thead>
<tbody>${rows.map(row)}</tbody>
</table>`
    : html`<p>Nothing is held${endpoint || reason ? ' that matches' : ''}.</p>`
}
<div class="pager">${
      last && rows.length === context.limits.pageSize
        ? html`<a class="button secondary" rel="next" href="${consolePath(['quarantine'], { ...filters, before: encodeTimeId(last.received_key, last.id) })}">Older →</a>`
        : html`<span class="muted">End of the results.</span>`
    }${before ? html` <a href="${consolePath(['quarantine'], filters)}">Newest</a>` : ''}</div>`);
  } catch (error) {
    const failure = queryFailure(error, context);
    frame(html`<div class="error">${failure.message}</div>`, failure.status);
  }
}

function settledNote(held: QuarantinedRow): Html | string {
  const at = held.released_at ?? held.dropped_at;
  if (!at) return '';
  return html`<p class="notice">${held.released_at ? 'Released' : 'Dropped'} ${formatTime(at)} by ${visible(held.settled_by ?? '?')}${
    held.settle_reason ? html`: ${visible(held.settle_reason)}` : ''
  }</p>`;
}

export async function quarantinedPage(context: ConsoleContext, req: Request, res: Response): Promise<void> {
  const viewer = viewerOf(req);
  const id = String(req.params.id ?? '');
  const frame = (body: Html, status = 200) =>
    sendPage(
      res,
      layout(
        { title: `Quarantined ${id.slice(0, 20)}`, viewer, current: 'quarantine', demo: context.demo },
        body,
      ),
      status,
    );
  if (!/^\d{1,19}$/.test(id)) {
    frame(html`<div class="error">No quarantined delivery ${visible(id)}.</div>`, 404);
    return;
  }
  try {
    const [held] = await showQuarantined(context.pool, [id]);
    if (!held || !context.endpoints.includes(held.endpoint)) {
      frame(html`<div class="error">No quarantined delivery ${id} on a configured endpoint.</div>`, 404);
      return;
    }
    const isHeld = !held.released_at && !held.dropped_at;
    const body = rawBody(held.body);
    const headers = Object.entries(held.headers);
    frame(html`<h1>Quarantined delivery ${held.id}</h1>
<div class="actions">
  <a class="button secondary" href="${consolePath(['quarantine'], { endpoint: held.endpoint })}">← ${visible(held.endpoint)} quarantine</a>
  ${
    isHeld && canAct(viewer)
      ? html`<form method="post" action="/actions/quarantine-release/preview" class="inline">
    <input type="hidden" name="_csrf" value="${viewer.csrf}">
    <input type="hidden" name="id" value="${held.id}">
    <button type="submit">Release…</button>
  </form>
  <form method="post" action="/actions/quarantine-drop/preview" class="inline">
    <input type="hidden" name="_csrf" value="${viewer.csrf}">
    <input type="hidden" name="id" value="${held.id}">
    <input type="text" name="reason" required maxlength="1000" placeholder="why it is given up" aria-label="Reason to drop">
    <button type="submit" class="secondary">Drop…</button>
  </form>`
      : ''
  }
</div>
${settledNote(held)}
<dl class="facts">
  <dt>Endpoint</dt><dd>${visible(held.endpoint)}</dd>
  <dt>Received</dt><dd>${formatTime(held.received_at)}</dd>
  <dt>Reason</dt><dd class="mono reason">${visible(held.reason)}</dd>
  <dt>Why</dt><dd class="why">${visible(held.message)}</dd>
  <dt>Status</dt><dd>${isHeld ? 'held' : held.released_at ? 'released' : 'dropped'}</dd>
</dl>
<h2>Headers kept</h2>
${
  headers.length === 0
    ? html`<p class="muted">No headers kept.</p>`
    : html`<table class="kv">${headers.map(
        ([name, value]) =>
          html`<tr><td class="mono">${visible(name)}</td><td class="mono">${visible(String(value))}</td></tr>`,
      )}</table>`
}
<h2>Body <span class="muted">(${held.body_bytes} bytes${body.kind === 'hex' ? ', not UTF-8: shown in hex' : ', shown as text'}${
      held.body_bytes > BODY_SHOWN_BYTES ? `, the first ${BODY_SHOWN_BYTES}` : ''
    })</span></h2>
${body.markup}`);
  } catch (error) {
    const failure = queryFailure(error, context);
    frame(html`<div class="error">${failure.message}</div>`, failure.status);
  }
}
