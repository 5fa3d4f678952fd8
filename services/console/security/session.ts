import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import { z } from 'zod';

/**
 * Sessions are signed cookies: `<payload>.<HMAC-SHA256>`, both base64url, keyed by the session
 * secret every console replica shares (console.sessionSecret), so any replica accepts a session
 * another made and nothing is stored server-side. The payload names the user, how they signed in,
 * a random session id (what CSRF tokens are bound to) and the expiry; a changed byte fails the
 * signature. The MAC also covers a binding the cookie does not carry: for a password user, their
 * current entry (name and password hash), looked up on every request (auth.ts), so removing the
 * user or changing the password ends every session they have. Signing out clears the cookie; a
 * copied cookie stays valid until it expires (console.sessionTtl) or its user changes, which is
 * why the cookie is HttpOnly, Secure and SameSite=Strict.
 */
const payloadSchema = z.strictObject({
  u: z.string().min(1).max(200),
  via: z.enum(['password', 'demo']),
  sid: z.string().regex(/^[A-Za-z0-9_-]{22}$/),
  exp: z.number().int().positive(),
});

export type SessionPayload = z.infer<typeof payloadSchema>;

export class SessionKeys {
  private readonly key: Buffer;

  constructor(secret: string | Buffer) {
    // Derived, so the raw secret is used for nothing else and sessions and CSRF keys differ.
    this.key = createHmac('sha256', secret).update('hookgate console session v1').digest();
  }

  mac(purpose: string, value: string): Buffer {
    return createHmac('sha256', this.key).update(`${purpose}\0${value}`).digest();
  }

  /** `binding`: what the session must still match when it comes back (see the file's comment). */
  sign(payload: SessionPayload, binding = ''): string {
    const body = Buffer.from(JSON.stringify(payload)).toString('base64url');
    return `${body}.${this.mac('session', `${body}\0${binding}`).toString('base64url')}`;
  }

  /**
   * The payload of a cookie this key signed, not expired, whose binding (`bindingOf` its payload;
   * null: the session's user is gone) is still the one it was signed with; null otherwise.
   */
  verify(
    cookie: string | undefined,
    now: number,
    bindingOf: (payload: SessionPayload) => string | null = () => '',
  ): SessionPayload | null {
    // Exactly `<base64url>.<43 base64url characters>`: a decoder that skips what is not base64
    // (or the two unused bits of the last character) would accept other spellings of one MAC.
    if (!cookie || cookie.length > 2_000 || !COOKIE_FORMAT.test(cookie)) return null;
    const dot = cookie.indexOf('.');
    const body = cookie.slice(0, dot);
    let parsed: unknown;
    try {
      parsed = JSON.parse(Buffer.from(body, 'base64url').toString('utf8'));
    } catch {
      return null;
    }
    const payload = payloadSchema.safeParse(parsed);
    if (!payload.success) return null;
    const binding = bindingOf(payload.data);
    if (binding === null) return null;
    if (!sameText(cookie.slice(dot + 1), this.mac('session', `${body}\0${binding}`).toString('base64url')))
      return null;
    return payload.data.exp <= now ? null : payload.data;
  }
}

const COOKIE_FORMAT = /^[A-Za-z0-9_-]{1,1900}\.[A-Za-z0-9_-]{43}$/;

/** Constant-time equality of two ASCII texts (a MAC as sent and as computed). */
function sameText(given: string, expected: string): boolean {
  const a = Buffer.from(given);
  const b = Buffer.from(expected);
  return a.length === b.length && timingSafeEqual(a, b);
}

export function newSessionId(): string {
  return randomBytes(16).toString('base64url');
}

/**
 * CSRF tokens (synchroniser pattern): the HMAC of what the request's credentials are bound to (a
 * session id, the pre-sign-in nonce, a proxy-authenticated user), so a token from one session is
 * worth nothing in another, and a page from another site can neither read nor forge one.
 */
export function csrfToken(keys: SessionKeys, binding: string): string {
  return keys.mac('csrf', binding).toString('base64url');
}

export function csrfValid(keys: SessionKeys, binding: string, token: unknown): boolean {
  if (typeof token !== 'string' || token.length > 200) return false;
  return sameText(token, csrfToken(keys, binding));
}

/** `name=value` pairs of a Cookie header (the last of a repeated name wins nothing: the first does). */
export function parseCookies(header: string | undefined): Map<string, string> {
  const cookies = new Map<string, string>();
  if (!header) return cookies;
  for (const part of header.split(';')) {
    const eq = part.indexOf('=');
    if (eq <= 0) continue;
    const name = part.slice(0, eq).trim();
    if (!cookies.has(name)) cookies.set(name, part.slice(eq + 1).trim());
  }
  return cookies;
}

export interface CookieOptions {
  readonly secure: boolean;
  readonly maxAgeSeconds?: number;
}

/**
 * A Set-Cookie value: HttpOnly and SameSite=Strict always, Secure (with the `__Host-` name
 * prefix, which makes browsers refuse it without Secure, a Path of / and no Domain) outside the
 * loopback demo.
 */
export function setCookie(name: string, value: string, options: CookieOptions): string {
  const parts = [`${cookieName(name, options.secure)}=${value}`, 'Path=/', 'HttpOnly', 'SameSite=Strict'];
  if (options.secure) parts.push('Secure');
  if (options.maxAgeSeconds !== undefined) parts.push(`Max-Age=${options.maxAgeSeconds}`);
  return parts.join('; ');
}

export function cookieName(name: string, secure: boolean): string {
  return secure ? `__Host-${name}` : name;
}
