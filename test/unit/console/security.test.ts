import { describe, expect, it } from 'vitest';
import { safeNext } from '../../../services/console/security/auth.ts';
import { CONTENT_SECURITY_POLICY } from '../../../services/console/security/headers.ts';
import { LoginLimiter } from '../../../services/console/security/login-limiter.ts';
import {
  hashPassword,
  parsePasswordHash,
  verifyPassword,
} from '../../../services/console/security/passwords.ts';
import {
  csrfToken,
  csrfValid,
  newSessionId,
  parseCookies,
  SessionKeys,
  setCookie,
} from '../../../services/console/security/session.ts';
import { tokenDigest, tokenMatches } from '../../../services/console/security/tokens.ts';

const SECRET = 'a-session-secret-of-at-least-32-characters';

describe('console passwords', () => {
  it('hashes with scrypt and a random salt, and verifies only the same password', async () => {
    const one = await hashPassword('correct horse battery staple');
    const two = await hashPassword('correct horse battery staple');
    expect(one).toMatch(/^scrypt\$32768\$8\$1\$[A-Za-z0-9_-]{22}\$[A-Za-z0-9_-]{43}$/);
    expect(one).not.toBe(two);
    const parsed = parsePasswordHash(one)!;
    expect(await verifyPassword('correct horse battery staple', parsed)).toBe(true);
    expect(await verifyPassword('correct horse battery stapl', parsed)).toBe(false);
    expect(await verifyPassword('Correct horse battery staple', parsed)).toBe(false);
  });

  it('refuses short passwords and hashes it cannot check or afford', async () => {
    await expect(hashPassword('short')).rejects.toThrow(/at least 12 characters/);
    const good = await hashPassword('a long enough password');
    expect(parsePasswordHash(good.replace('$32768$', '$1048577$'))).toBeNull();
    expect(parsePasswordHash(good.replace('$32768$', '$4194304$'))).toBeNull();
    expect(parsePasswordHash('plain-text-password')).toBeNull();
    expect(parsePasswordHash(good.slice(0, -10))).toBeNull();
  });
});

describe('console sessions', () => {
  const keys = new SessionKeys(SECRET);
  const payload = { u: 'alice', via: 'password' as const, sid: newSessionId(), exp: 2_000 };

  it('accepts its own signed cookie until it expires', () => {
    const cookie = keys.sign(payload);
    expect(keys.verify(cookie, 1_999)).toEqual(payload);
    expect(keys.verify(cookie, 2_000)).toBeNull();
  });

  it('refuses a cookie with any byte changed, signed by another key, or malformed', () => {
    const cookie = keys.sign(payload);
    const [body, mac] = cookie.split('.') as [string, string];
    const forged = Buffer.from(JSON.stringify({ ...payload, u: 'admin' })).toString('base64url');
    expect(keys.verify(`${forged}.${mac}`, 0)).toBeNull();
    // The first character of the MAC: the last one of a 32-byte MAC's base64url holds two unused
    // bits, so changing only those (B to A) would name the same bytes.
    expect(keys.verify(`${body}.${mac.startsWith('A') ? 'B' : 'A'}${mac.slice(1)}`, 0)).toBeNull();
    expect(new SessionKeys(`${SECRET}!`).verify(cookie, 0)).toBeNull();
    for (const bad of ['', '.', 'abc', `${body}.`, `.${mac}`, 'x'.repeat(3000)])
      expect(keys.verify(bad, 0)).toBeNull();
  });

  it('binds CSRF tokens to one session: valid there, worthless in another', () => {
    const token = csrfToken(keys, 'sid\0one');
    expect(csrfValid(keys, 'sid\0one', token)).toBe(true);
    expect(csrfValid(keys, 'sid\0two', token)).toBe(false);
    expect(csrfValid(new SessionKeys(`${SECRET}!`), 'sid\0one', token)).toBe(false);
    for (const bad of [undefined, '', 'x', 42, token.slice(1)])
      expect(csrfValid(keys, 'sid\0one', bad)).toBe(false);
  });

  it('sets HttpOnly SameSite=Strict cookies, Secure with the __Host- prefix outside the demo', () => {
    expect(setCookie('hookgate_session', 'v', { secure: true, maxAgeSeconds: 60 })).toBe(
      '__Host-hookgate_session=v; Path=/; HttpOnly; SameSite=Strict; Secure; Max-Age=60',
    );
    expect(setCookie('hookgate_session', 'v', { secure: false })).toBe(
      'hookgate_session=v; Path=/; HttpOnly; SameSite=Strict',
    );
    expect(parseCookies('a=1; b=2; a=3')).toEqual(
      new Map([
        ['a', '1'],
        ['b', '2'],
      ]),
    );
  });
});

describe('console access tokens', () => {
  it('match by SHA-256 in constant time', () => {
    const token = 'a-random-token-of-at-least-32-characters';
    const digest = tokenDigest(token).toString('hex');
    expect(tokenMatches(token, digest)).toBe(true);
    expect(tokenMatches(`${token}x`, digest)).toBe(false);
    expect(tokenMatches(token, 'ab')).toBe(false);
  });
});

describe('sign-in limits', () => {
  const limits = {
    maxFailures: 5,
    windowMs: 900_000,
    baseDelayMs: 30_000,
    maxDelayMs: 900_000,
    maxKeys: 1_000,
  };

  it('lets four failures through, makes the fifth wait 30 s, then doubles the wait per failure', () => {
    const limiter = new LoginLimiter(limits);
    for (let n = 1; n <= 4; n += 1) {
      expect(limiter.waitMs('10.0.0.1', 'bob', 0)).toBe(0);
      limiter.failed('10.0.0.1', 'bob', 0);
    }
    expect(limiter.waitMs('10.0.0.1', 'bob', 0)).toBe(0);
    limiter.failed('10.0.0.1', 'bob', 0);
    expect(limiter.waitMs('10.0.0.1', 'BOB', 1_000)).toBe(29_000);
    limiter.failed('10.0.0.1', 'bob', 30_000);
    expect(limiter.waitMs('10.0.0.1', 'bob', 30_000)).toBe(60_000);
    // Another name from the same source is not held back by bob's failures (until the source's own allowance).
    expect(limiter.waitMs('10.0.0.1', 'alice', 30_000)).toBe(0);
    // Another source trying bob is not either.
    expect(limiter.waitMs('10.0.0.2', 'bob', 30_000)).toBe(0);
  });

  it('caps the wait, forgets a key after the window, and a sign-in clears the name', () => {
    const limiter = new LoginLimiter(limits);
    for (let n = 0; n < 30; n += 1) limiter.failed('10.0.0.1', 'bob', 0);
    expect(limiter.waitMs('10.0.0.1', 'bob', 0)).toBe(900_000);
    expect(limiter.waitMs('10.0.0.1', 'bob', 900_001)).toBe(0);
    const other = new LoginLimiter(limits);
    for (let n = 0; n < 4; n += 1) other.failed('10.0.0.1', 'carol', 0);
    other.succeeded('10.0.0.1', 'carol');
    other.failed('10.0.0.1', 'carol', 0);
    expect(other.waitMs('10.0.0.1', 'carol', 0)).toBe(0);
  });

  it('limits a source spraying many names at four times one name’s allowance', () => {
    const limiter = new LoginLimiter(limits);
    for (let n = 0; n < 20; n += 1) limiter.failed('10.0.0.9', `user${n}`, 0);
    expect(limiter.waitMs('10.0.0.9', 'someone-new', 0)).toBe(30_000);
  });
});

describe('console request rules', () => {
  it('sends sign-ins on only to paths of the console', () => {
    expect(safeNext('/events?status=dead')).toBe('/events?status=dead');
    for (const bad of [
      'https://evil.example/',
      '//evil.example',
      '/\\evil.example',
      'javascript:alert(1)',
      '/a\nb',
      42,
    ]) {
      expect(safeNext(bad)).toBe('/');
    }
  });

  it('allows no script at all, no framing, and forms only to itself', () => {
    expect(CONTENT_SECURITY_POLICY).toMatch(/^default-src 'none';/);
    expect(CONTENT_SECURITY_POLICY).not.toMatch(/script-src|unsafe-inline|unsafe-eval/);
    expect(CONTENT_SECURITY_POLICY).toContain("frame-ancestors 'none'");
    expect(CONTENT_SECURITY_POLICY).toContain("form-action 'self'");
  });
});
