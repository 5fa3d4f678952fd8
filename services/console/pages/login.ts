import type { Request, Response } from 'express';
import { html } from '../html/html.ts';
import { layout } from '../html/layout.ts';
import { sendPage } from '../html/respond.ts';
import { type ConsoleAuth, safeNext } from '../security/auth.ts';
import { csrfToken, csrfValid } from '../security/session.ts';

function form(
  auth: ConsoleAuth,
  req: Request,
  res: Response,
  next: string,
  message: string | null,
  status = 200,
) {
  const nonce = auth.loginNonce(req, res);
  const token = csrfToken(auth.keys, `login\0${nonce}`);
  const passwords = auth.settings.users.size > 0;
  sendPage(
    res,
    layout(
      { title: 'Sign in', viewer: null },
      html`<div class="login">
  <h1>Sign in</h1>
  ${message ? html`<p class="error" role="alert">${message}</p>` : ''}
  ${
    passwords
      ? html`<form method="post" action="/login">
    <input type="hidden" name="_csrf" value="${token}">
    <input type="hidden" name="next" value="${next}">
    <label>User<input name="user" autocomplete="username" required maxlength="100" autofocus></label>
    <label>Password<input name="password" type="password" autocomplete="current-password" required maxlength="1000"></label>
    <button type="submit">Sign in</button>
  </form>`
      : html`<p>This console has no password users: sign in through the authenticating proxy in front of it, or use an access token.</p>`
  }
</div>`,
    ),
    status,
  );
}

export function loginPage(auth: ConsoleAuth, req: Request, res: Response): void {
  if (auth.identify(req, res)) {
    res.redirect(303, safeNext(req.query.next));
    return;
  }
  form(auth, req, res, safeNext(req.query.next), null);
}

export async function loginSubmit(auth: ConsoleAuth, req: Request, res: Response): Promise<void> {
  const body = (req.body ?? {}) as Record<string, unknown>;
  const next = safeNext(body.next);
  const binding = auth.loginBinding(req);
  if (!binding || !csrfValid(auth.keys, binding, body._csrf) || auth.csrfRefusal(req, null)) {
    form(auth, req, res, next, 'The sign-in form expired or came from elsewhere; try again.', 403);
    return;
  }
  const user = typeof body.user === 'string' ? body.user.trim().slice(0, 100) : '';
  const password = typeof body.password === 'string' ? body.password.slice(0, 1_000) : '';
  if (user === '' || password === '') {
    form(auth, req, res, next, 'Enter a user name and a password.', 400);
    return;
  }
  const result = await auth.signIn(auth.source(req), user, password);
  if (result.ok) {
    auth.startSession(res, result.name, 'password');
    res.redirect(303, next);
    return;
  }
  if (result.reason === 'invalid') {
    form(auth, req, res, next, 'Wrong user name or password.', 401);
    return;
  }
  res.setHeader('Retry-After', String(result.retryAfterSeconds ?? 30));
  form(
    auth,
    req,
    res,
    next,
    result.reason === 'busy'
      ? 'The console is checking many sign-ins right now; try again in a few seconds.'
      : `Too many failed sign-ins: try again in ${result.retryAfterSeconds} s.`,
    429,
  );
}

export function logoutSubmit(auth: ConsoleAuth, _req: Request, res: Response): void {
  auth.endSession(res);
  res.redirect(303, '/login');
}
