import { randomBytes } from 'node:crypto';
import { isIP } from 'node:net';
import type { NextFunction, Request, Response } from 'express';
import { sourceOf } from '../../core/client-source.ts';
import type { ConsoleSettings } from '../settings.ts';
import { hostAllowed } from './host-check.ts';
import { LoginLimiter } from './login-limiter.ts';
import { DECOY_HASH, verifyPassword } from './passwords.ts';
import {
  cookieName,
  csrfToken,
  csrfValid,
  newSessionId,
  parseCookies,
  SessionKeys,
  setCookie,
} from './session.ts';
import { tokenMatches } from './tokens.ts';
import { setViewer, type Viewer } from './viewer.ts';

export const SESSION_COOKIE = 'hookgate_session';
export const LOGIN_COOKIE = 'hookgate_login';
const LOGIN_NONCE_SECONDS = 30 * 60;
/** scrypt runs on libuv's thread pool: at most this many at once, so sign-in floods cannot starve the pages. */
const CONCURRENT_VERIFICATIONS = 2;
const MAX_WAITING_VERIFICATIONS = 32;

export type SignInResult =
  | { readonly ok: true; readonly name: string }
  | {
      readonly ok: false;
      readonly reason: 'invalid' | 'limited' | 'busy';
      readonly retryAfterSeconds?: number;
    };

function hasControl(text: string): boolean {
  for (let i = 0; i < text.length; i += 1) {
    const code = text.charCodeAt(i);
    if (code < 0x20 || code === 0x7f) return true;
  }
  return false;
}

/** Where a sign-in may send the browser afterwards: a path of this console, nothing else. */
export function safeNext(value: unknown): string {
  if (typeof value !== 'string' || !value.startsWith('/') || value.startsWith('//') || value.includes('\\'))
    return '/';
  if (value.length > 2_000 || hasControl(value)) return '/';
  return value;
}

export class ConsoleAuth {
  readonly keys: SessionKeys;
  readonly settings: ConsoleSettings;
  private readonly limiter: LoginLimiter;
  private readonly now: () => number;
  private running = 0;
  private readonly waiting: Array<() => void> = [];

  constructor(settings: ConsoleSettings, now: () => number = Date.now) {
    this.settings = settings;
    this.keys = new SessionKeys(settings.sessionSecret);
    this.now = now;
    const limit = settings.config.loginLimit;
    this.limiter = new LoginLimiter({
      maxFailures: limit.maxFailures,
      windowMs: limit.window,
      baseDelayMs: limit.delay,
      maxDelayMs: limit.maxDelay,
      maxKeys: 100_000,
    });
  }

  /** Secure cookies everywhere but the loopback demo (browsers accept them on http://127.0.0.1 too). */
  get secureCookies(): boolean {
    return !this.settings.demo;
  }

  source(req: Request): string {
    const forwarded = req.headers['x-forwarded-for'];
    return sourceOf(
      req.socket.remoteAddress,
      Array.isArray(forwarded) ? forwarded.join(',') : forwarded,
      this.settings.config.trustedProxyHops,
    );
  }

  private viewer(name: string, via: Viewer['via'], binding: string | null, role: Viewer['role']): Viewer {
    return { name, via, role, csrfBinding: binding, csrf: binding ? csrfToken(this.keys, binding) : '' };
  }

  /** The viewer a request's credentials name, or null. Issues the demo's session when there is none. */
  identify(req: Request, res: Response): Viewer | null {
    const authorization = req.headers.authorization;
    if (authorization?.startsWith('Bearer ')) {
      const token = authorization.slice('Bearer '.length).trim();
      const match = this.settings.tokens.find((candidate) => tokenMatches(token, candidate.sha256));
      return match ? this.viewer(match.name, 'token', null, match.role) : null;
    }
    const proxy = this.settings.proxy;
    if (proxy) {
      // The TCP peer itself, never a header: only the proxy's own connections carry its word.
      const raw = req.socket.remoteAddress ?? '';
      const peer = /^::ffff:\d+\.\d+\.\d+\.\d+$/i.test(raw) ? raw.slice(7) : raw;
      const family = isIP(peer) === 6 ? 'ipv6' : 'ipv4';
      const header = req.headers[proxy.userHeader];
      const name = Array.isArray(header) ? undefined : header?.trim();
      if (
        name &&
        name.length <= 200 &&
        !hasControl(name) &&
        isIP(peer) !== 0 &&
        proxy.trusted.check(peer, family)
      ) {
        return this.viewer(name, 'proxy', `proxy\0${name}`, proxy.role);
      }
    }
    const cookies = parseCookies(req.headers.cookie);
    const session = this.keys.verify(
      cookies.get(cookieName(SESSION_COOKIE, this.secureCookies)),
      this.now(),
      (payload) => this.sessionBinding(payload.u, payload.via),
    );
    if (session) return this.viewer(session.u, session.via, `sid\0${session.sid}`, this.roleOf(session));
    if (this.settings.demo) {
      const sid = newSessionId();
      this.startSession(res, 'demo', 'demo', sid);
      return this.viewer('demo', 'demo', `sid\0${sid}`, 'operator');
    }
    return null;
  }

  /** A session's role is its user's as configured now (a user no longer configured only reads). */
  private roleOf(session: { readonly u: string; readonly via: 'password' | 'demo' }): Viewer['role'] {
    if (session.via === 'demo') return this.settings.demo ? 'operator' : 'viewer';
    return this.settings.users.get(session.u.toLowerCase())?.role ?? 'viewer';
  }

  /**
   * What a session stays bound to: a password user's current entry (their name and password
   * hash, as this process read them at start), so a user removed or given a new password has no
   * session left; the demo's sessions to the demo. null: nobody the session could belong to.
   */
  private sessionBinding(name: string, via: 'password' | 'demo'): string | null {
    if (via === 'demo') return this.settings.demo ? 'demo' : null;
    const user = this.settings.users.get(name.toLowerCase());
    if (!user || user.name !== name) return null;
    const { N, r, p, salt, hash } = user.hash;
    return `user\0${user.name}\0${N}$${r}$${p}$${salt.toString('base64url')}$${hash.toString('base64url')}`;
  }

  startSession(res: Response, name: string, via: 'password' | 'demo', sid: string = newSessionId()): void {
    const ttl = this.settings.config.sessionTtl;
    const binding = this.sessionBinding(name, via);
    if (binding === null) throw new Error(`No console user ${name} to start a session for.`);
    const cookie = this.keys.sign({ u: name, via, sid, exp: this.now() + ttl }, binding);
    res.append(
      'Set-Cookie',
      setCookie(SESSION_COOKIE, cookie, {
        secure: this.secureCookies,
        maxAgeSeconds: Math.floor(ttl / 1000),
      }),
    );
  }

  endSession(res: Response): void {
    res.append('Set-Cookie', setCookie(SESSION_COOKIE, '', { secure: this.secureCookies, maxAgeSeconds: 0 }));
  }

  /** Every route behind it has a viewer; GET and HEAD without one go to the sign-in page. */
  readonly requireViewer = (req: Request, res: Response, next: NextFunction): void => {
    const viewer = this.identify(req, res);
    if (viewer) {
      setViewer(req, viewer);
      next();
      return;
    }
    if (req.method === 'GET' || req.method === 'HEAD') {
      res.redirect(303, `/login?next=${encodeURIComponent(safeNext(req.originalUrl))}`);
      return;
    }
    res.status(401).type('text/plain').send('Sign in first.\n');
  };

  /**
   * A state-changing request must carry the CSRF token of its viewer's session in the form
   * (`_csrf`), and must not come from another site (Sec-Fetch-Site and Origin, where the browser
   * sends them). Bearer-token requests carry no ambient credential and need none.
   */
  csrfRefusal(req: Request, binding: string | null): string | null {
    const site = req.headers['sec-fetch-site'];
    if (site !== undefined && site !== 'same-origin' && site !== 'none')
      return 'the request came from another site';
    const origin = req.headers.origin;
    if (origin !== undefined && origin !== 'null') {
      let host: string | null = null;
      try {
        host = new URL(origin).host;
      } catch {
        host = null;
      }
      // The origin must be this console's by its own right, not merely the Host the page's
      // request carries (a rebinding page chooses both alike).
      if (host !== req.headers.host || !hostAllowed(this.settings, host ?? undefined))
        return 'the request came from another origin';
    } else if (origin === 'null') {
      return 'the request came from an opaque origin';
    }
    if (binding === null) return null;
    const token = (req.body as Record<string, unknown> | undefined)?._csrf;
    return csrfValid(this.keys, binding, token)
      ? null
      : 'the form carried no valid CSRF token (reload the page and try again)';
  }

  readonly requireCsrf = (req: Request, res: Response, next: NextFunction): void => {
    const viewer = (req as Request & { viewer?: Viewer }).viewer;
    const refusal = this.csrfRefusal(req, viewer ? viewer.csrfBinding : 'no viewer');
    if (refusal) {
      res.status(403).type('text/plain').send(`Refused: ${refusal}.\n`);
      return;
    }
    next();
  };

  /** The sign-in form's own CSRF binding: a nonce in a short-lived cookie, set when the form is shown. */
  loginNonce(req: Request, res: Response): string {
    const existing = parseCookies(req.headers.cookie).get(cookieName(LOGIN_COOKIE, this.secureCookies));
    if (existing && /^[A-Za-z0-9_-]{22}$/.test(existing)) return existing;
    const nonce = randomBytes(16).toString('base64url');
    res.append(
      'Set-Cookie',
      setCookie(LOGIN_COOKIE, nonce, { secure: this.secureCookies, maxAgeSeconds: LOGIN_NONCE_SECONDS }),
    );
    return nonce;
  }

  loginBinding(req: Request): string | null {
    const nonce = parseCookies(req.headers.cookie).get(cookieName(LOGIN_COOKIE, this.secureCookies));
    return nonce && /^[A-Za-z0-9_-]{22}$/.test(nonce) ? `login\0${nonce}` : null;
  }

  private async slot<T>(work: () => Promise<T>): Promise<T | 'busy'> {
    if (this.running >= CONCURRENT_VERIFICATIONS) {
      if (this.waiting.length >= MAX_WAITING_VERIFICATIONS) return 'busy';
      await new Promise<void>((resolve) => this.waiting.push(resolve));
    }
    this.running += 1;
    try {
      return await work();
    } finally {
      this.running -= 1;
      this.waiting.shift()?.();
    }
  }

  /** Checks a name and password under the attempt limits. */
  async signIn(source: string, name: string, password: string): Promise<SignInResult> {
    const wait = this.limiter.waitMs(source, name, this.now());
    if (wait > 0) return { ok: false, reason: 'limited', retryAfterSeconds: Math.ceil(wait / 1000) };
    const user = this.settings.users.get(name.toLowerCase());
    const verified = await this.slot(() => verifyPassword(password, user?.hash ?? DECOY_HASH));
    if (verified === 'busy') return { ok: false, reason: 'busy', retryAfterSeconds: 5 };
    if (verified && user) {
      this.limiter.succeeded(source, name);
      return { ok: true, name: user.name };
    }
    this.limiter.failed(source, name, this.now());
    const after = this.limiter.waitMs(source, name, this.now());
    return after > 0
      ? { ok: false, reason: 'limited', retryAfterSeconds: Math.ceil(after / 1000) }
      : { ok: false, reason: 'invalid' };
  }
}
