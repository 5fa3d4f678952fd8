import type { Request, Response } from 'express';
import type { ActionContext, AnyAction } from '../actions/registry.ts';
import type { ConsoleContext } from '../context.ts';
import { consolePath, html } from '../html/html.ts';
import { layout } from '../html/layout.ts';
import { sendPage } from '../html/respond.ts';
import { visible } from '../html/visible-text.ts';
import { viewerOf } from '../security/viewer.ts';
import { queryFailure } from './errors.ts';

function actionContext(context: ConsoleContext, req: Request): ActionContext {
  return {
    pool: context.pool,
    boss: context.boss,
    logger: context.logger,
    viewer: viewerOf(req),
    endpoints: context.endpoints,
    config: context.config,
  };
}

function resolve(
  context: ConsoleContext,
  req: Request,
  res: Response,
): { action: AnyAction; target: unknown } | null {
  const viewer = viewerOf(req);
  const frame = (message: string, status: number) =>
    sendPage(
      res,
      layout({ title: 'Action', viewer, demo: context.demo }, html`<div class="error">${message}</div>`),
      status,
    );
  const action = context.actions.get(String(req.params.action ?? ''));
  if (!action) {
    frame('No such action.', 404);
    return null;
  }
  // The form's own fields (its CSRF token, the count it was shown) are not the action's.
  const { _csrf: _token, expected: _expected, ...fields } = (req.body ?? {}) as Record<string, unknown>;
  const target = action.parse(fields, context.endpoints);
  if (typeof target === 'string') {
    frame(target, 400);
    return null;
  }
  return { action, target };
}

/** The dry run: what the action would change, and a form to confirm it. */
export async function actionPreview(context: ConsoleContext, req: Request, res: Response): Promise<void> {
  const resolved = resolve(context, req, res);
  if (!resolved) return;
  const { action, target } = resolved;
  const viewer = viewerOf(req);
  try {
    const preview = await action.preview(actionContext(context, req), target);
    const fields = Object.entries(action.fields(target));
    sendPage(
      res,
      layout(
        { title: action.title, viewer, demo: context.demo },
        html`<h1>${action.title}: confirm</h1>
<div class="confirm">
  <p><strong>Dry run:</strong> ${preview.summary}</p>
  ${
    preview.sample.length > 0
      ? html`<ul>${preview.sample.map(
          (item) =>
            html`<li><a class="mono" href="${consolePath(['events', item.endpoint, item.eventId])}">${visible(item.label)}</a> <span class="muted">${item.note}</span></li>`,
        )}</ul>${preview.count > preview.sample.length ? html`<p class="muted">…and ${preview.count - preview.sample.length} more.</p>` : ''}`
      : ''
  }
  ${
    preview.count > 0
      ? html`<form method="post" action="${consolePath(['actions', action.id])}" class="actions">
    <input type="hidden" name="_csrf" value="${viewer.csrf}">
    ${fields.map(([name, value]) => html`<input type="hidden" name="${name}" value="${value}">`)}
    <input type="hidden" name="expected" value="${preview.count}">
    <button type="submit" class="danger">${preview.confirmLabel ?? `${action.title} ${preview.count} event(s)`}</button>
  </form>`
      : html`<p>Nothing to do.</p>`
  }
</div>`,
      ),
    );
  } catch (error) {
    const failure = queryFailure(error, context);
    sendPage(
      res,
      layout(
        { title: action.title, viewer, demo: context.demo },
        html`<div class="error">${failure.message}</div>`,
      ),
      failure.status,
    );
  }
}

/** Runs a confirmed action through its shared function, logs it with the console user, and says what changed. */
export async function actionRun(context: ConsoleContext, req: Request, res: Response): Promise<void> {
  const resolved = resolve(context, req, res);
  if (!resolved) return;
  const { action, target } = resolved;
  const viewer = viewerOf(req);
  try {
    const result = await action.run(actionContext(context, req), target);
    context.logger.info(
      {
        console_user: viewer.name,
        via: viewer.via,
        action: action.id,
        target: action.fields(target),
        changed: result.changed,
      },
      'console action',
    );
    sendPage(
      res,
      layout(
        { title: action.title, viewer, demo: context.demo, notice: result.message },
        html`<h1>${action.title}</h1><p><a class="button secondary" href="${result.back}">Back</a></p>`,
      ),
    );
  } catch (error) {
    const failure = queryFailure(error, context);
    sendPage(
      res,
      layout(
        { title: action.title, viewer, demo: context.demo },
        html`<div class="error">${failure.message}</div>`,
      ),
      failure.status,
    );
  }
}
