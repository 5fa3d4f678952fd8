import type { Request, Response } from 'express';
import { type AttemptRow, attemptsOf } from '../../core/attempts/attempts.ts';
import { type AuditRow, actionsOnEvent } from '../../core/audit/audit.ts';
import { type EventDestination, eventDestinations } from '../../core/destinations/actions.ts';
import { INDENTED_DEPTH, jsonDepth, jsonText } from '../../core/json-text.ts';
import { describeVersion } from '../../core/providers/version.ts';
import type { ConsoleContext } from '../context.ts';
import { consolePath, html } from '../html/html.ts';
import { formatMs, formatTime, layout } from '../html/layout.ts';
import { sendPage } from '../html/respond.ts';
import { visible, visibleBlock } from '../html/visible-text.ts';
import { type EventView, loadEvent, timelineOf } from '../read-models/event.ts';
import { canAct } from '../security/roles.ts';
import { viewerOf } from '../security/viewer.ts';
import { queryFailure } from './errors.ts';
import { statusBadge } from './events.ts';

const NOTICES: Readonly<Record<string, string>> = {
  requeued: 'Requeued: the event is pending again with a fresh job.',
};

function headerRows(headers: Record<string, unknown>) {
  const entries = Object.entries(headers);
  if (entries.length === 0) return html`<p class="muted">No headers kept.</p>`;
  return html`<table class="kv">${entries.map(
    ([name, value]) =>
      html`<tr><td class="mono">${visible(name)}</td><td class="mono">${visible(typeof value === 'string' ? value : JSON.stringify(value))}</td></tr>`,
  )}</table>`;
}

/** What `events show` prints beside the inbox row: apply attempts, destinations, audit entries. */
interface EventHistory {
  readonly attempts: readonly AttemptRow[];
  readonly destinations: readonly EventDestination[];
  readonly audit: readonly AuditRow[];
}

function attemptRows(attempts: readonly AttemptRow[]) {
  if (attempts.length === 0) return html`<p class="muted">No apply attempt recorded yet.</p>`;
  return html`<table class="events"><thead><tr><th>#</th><th>At</th><th>Worker</th><th>Outcome</th><th>Duration</th><th>Error</th></tr></thead><tbody>${attempts.map(
    (attempt) =>
      html`<tr><td>${attempt.attempt}</td><td class="mono">${formatTime(attempt.at)}</td><td class="mono">${visible(attempt.worker)}</td><td>${statusBadge(attempt.outcome)}</td><td>${formatMs(attempt.duration_ms)}</td><td class="mono">${attempt.error_code ? html`${visible(attempt.error_code)}: ` : ''}${visible(attempt.error_message ?? '')}</td></tr>`,
  )}</tbody></table>`;
}

function destinationRows(
  endpoint: string,
  destinations: readonly EventDestination[],
  csrf: string,
  canRedeliver: boolean,
) {
  if (destinations.length === 0) return html`<p class="muted">This endpoint has no destinations.</p>`;
  return html`<table class="events"><thead><tr><th>Destination</th><th>Filter</th><th>Delivery</th><th>Status</th><th>Attempts</th><th>HTTP</th><th>Last attempt</th><th>Last error</th><th></th></tr></thead><tbody>${destinations.map(
    ({ destination, routedBy, matches, reason, delivery }) =>
      html`<tr aria-label="destination ${destination}"><td class="mono">${visible(destination)}</td><td>${
        matches === null
          ? 'no longer configured'
          : routedBy === 'handler'
            ? matches
              ? 'routed by the handler'
              : 'not routed here by the handler'
            : matches
              ? 'matches'
              : html`skipped <span class="muted">${visible(reason ?? '')}</span>`
      }</td><td class="mono">${delivery?.id ?? '-'}</td><td>${delivery ? visible(delivery.status) : '-'}</td><td>${delivery?.attempts ?? '-'}</td><td>${delivery?.http_status ?? '-'}</td><td class="mono">${formatTime(delivery?.last_attempt_at)}</td><td class="mono">${visible(delivery?.last_error ?? '')}</td><td>${
        canRedeliver && delivery && (delivery.status === 'dead' || delivery.status === 'delivered')
          ? html`<form method="post" action="/actions/redeliver/preview" class="inline">
    <input type="hidden" name="_csrf" value="${csrf}">
    <input type="hidden" name="endpoint" value="${endpoint}">
    <input type="hidden" name="destination" value="${destination}">
    <input type="hidden" name="delivery_id" value="${delivery.id}">
    <button type="submit" class="secondary">Redeliver…</button>
  </form>`
          : ''
      }</td></tr>`,
  )}</tbody></table>`;
}

function auditRows(audit: readonly AuditRow[]) {
  if (audit.length === 0) return html`<p class="muted">No operator action has named this event.</p>`;
  return html`<table class="events"><thead><tr><th>At</th><th>Actor</th><th>Action</th><th>Count</th><th>Run</th><th>Reason</th></tr></thead><tbody>${audit.map(
    (entry) =>
      html`<tr><td class="mono">${formatTime(entry.at)}</td><td>${visible(entry.actor)}</td><td class="mono">${visible(entry.command)}</td><td>${entry.count}</td><td>${entry.dry_run ? 'dry run' : 'run'}</td><td>${visible(entry.reason ?? '')}</td></tr>`,
  )}</tbody></table>`;
}

function detail(
  view: EventView,
  history: EventHistory,
  csrf: string,
  canRequeue: boolean,
  canDiscard: boolean,
  canRedeliver: boolean,
) {
  const { event, timeline } = view;
  // Any stored payload, however deep (json-text.ts): JSON.stringify overflows past some thousands of levels.
  const payload = jsonText(event.payload);
  const depth = jsonDepth(event.payload);
  return html`<h1 class="mono">${visible(event.event_id)}</h1>
<div class="actions">
  <a class="button secondary" href="${consolePath(['events'], { endpoint: event.endpoint })}">← ${visible(event.endpoint)} events</a>
  ${
    canRequeue && (event.status === 'dead' || event.status === 'parked')
      ? html`<form method="post" action="/actions/requeue/preview" class="inline">
    <input type="hidden" name="_csrf" value="${csrf}">
    <input type="hidden" name="endpoint" value="${event.endpoint}">
    <input type="hidden" name="event_id" value="${event.event_id}">
    <button type="submit">Requeue…</button>
  </form>`
      : ''
  }
  ${
    canDiscard && (event.status === 'dead' || event.status === 'parked')
      ? html`<form method="post" action="/actions/discard/preview" class="inline">
    <input type="hidden" name="_csrf" value="${csrf}">
    <input type="hidden" name="endpoint" value="${event.endpoint}">
    <input type="hidden" name="event_id" value="${event.event_id}">
    <input type="text" name="reason" required maxlength="1000" placeholder="why it can never succeed" aria-label="Reason to discard">
    <button type="submit" class="secondary">Discard…</button>
  </form>`
      : ''
  }
</div>
<dl class="facts">
  <dt>Endpoint</dt><dd>${visible(event.endpoint)} (${visible(event.provider)})</dd>
  <dt>Type</dt><dd class="mono">${visible(event.event_type)}</dd>
  <dt>Status</dt><dd>${statusBadge(event.status)}</dd>
  <dt>Attempts</dt><dd>${event.attempts}${event.requeued_attempts > 0 ? html` <span class="muted">(${event.requeued_attempts} before the last requeue)</span>` : ''}</dd>
  <dt>Entity</dt><dd class="mono">${event.entity_type ? visible(event.entity_type) : '-'} ${
    event.entity_id
      ? html`<a href="${consolePath(['events'], { entity_id: event.entity_id })}">${visible(event.entity_id)}</a>`
      : ''
  }${event.entity_version ? html` ${describeVersion(event.entity_version)}` : ''}</dd>
  <dt>Received</dt><dd>${formatTime(event.received_at)}${event.received_via ? html` <span class="muted">via ${visible(event.received_via)}</span>` : ''}</dd>
  <dt>Settled</dt><dd>${formatTime(event.processed_at)}</dd>
  <dt>Trace</dt><dd class="mono">${visible(event.traceparent ?? '-')}</dd>
</dl>
${event.last_error ? html`<h2>Last error</h2><pre class="error-text">${visibleBlock(event.last_error)}</pre>` : ''}
<h2>Timeline</h2>
<ol class="timeline">${timeline.map(
    (entry) =>
      html`<li><span class="when">${entry.at ? formatTime(entry.at) : 'now'}</span><span>${visible(entry.what)}${
        entry.detail ? html`<br><span class="mono muted">${visible(entry.detail)}</span>` : ''
      }</span></li>`,
  )}</ol>
<h2>Apply attempts</h2>
${attemptRows(history.attempts)}
<h2>Destinations</h2>
${destinationRows(event.endpoint, history.destinations, csrf, canRedeliver)}
<h2>Operator actions</h2>
${auditRows(history.audit)}
<h2>Headers kept</h2>
${headerRows(event.headers)}
<h2>Payload <span class="muted">(${event.payload_bytes} bytes stored${depth > INDENTED_DEPTH ? `; nested ${depth} levels deep, levels past ${INDENTED_DEPTH} shown on one line` : ''})</span></h2>
<pre class="block">${visibleBlock(payload)}</pre>`;
}

export async function eventPage(context: ConsoleContext, req: Request, res: Response): Promise<void> {
  const viewer = viewerOf(req);
  const endpoint = String(req.params.endpoint ?? '');
  const eventId = String(req.params.eventId ?? '');
  const frame = (body: ReturnType<typeof html>, notice?: string | null) =>
    layout(
      { title: `Event ${eventId.slice(0, 80)}`, viewer, current: 'events', demo: context.demo, notice },
      body,
    );
  if (!context.endpoints.includes(endpoint)) {
    sendPage(
      res,
      frame(html`<div class="error">No endpoint named ${visible(endpoint)} is configured.</div>`),
      404,
    );
    return;
  }
  try {
    const view = await loadEvent(context.pool, endpoint, eventId);
    if (!view) {
      sendPage(
        res,
        frame(html`<div class="error">No event ${visible(eventId)} on ${visible(endpoint)}.</div>`),
        404,
      );
      return;
    }
    const history: EventHistory = {
      attempts: await attemptsOf(context.pool, endpoint, eventId),
      destinations: await eventDestinations(context.pool, context.config, {
        endpoint,
        eventId,
        eventType: view.event.event_type,
        payload: view.event.payload,
      }),
      audit: await actionsOnEvent(context.pool, endpoint, eventId),
    };
    const done = typeof req.query.done === 'string' ? (NOTICES[req.query.done] ?? null) : null;
    sendPage(
      res,
      frame(
        detail(
          { ...view, timeline: timelineOf(view.event, history.audit) },
          history,
          viewer.csrf,
          canAct(viewer) && context.actions.get('requeue') !== undefined,
          canAct(viewer) && context.actions.get('discard') !== undefined,
          canAct(viewer) && context.actions.get('redeliver') !== undefined,
        ),
        done,
      ),
    );
  } catch (error) {
    const failure = queryFailure(error, context);
    sendPage(res, frame(html`<div class="error">${failure.message}</div>`), failure.status);
  }
}
