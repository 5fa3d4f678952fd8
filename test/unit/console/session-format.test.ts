import { describe, expect, it } from 'vitest';
import {
  csrfToken,
  csrfValid,
  newSessionId,
  SessionKeys,
} from '../../../services/console/security/session.ts';

// A session cookie and a CSRF token are accepted in exactly the spelling they were issued in
// (no byte before, after or beside it that a lenient base64 decoder would skip), and a session is
// accepted only while what it was bound to (its user's current entry) is unchanged.
const keys = new SessionKeys('a-session-secret-of-at-least-32-characters');
const payload = { u: 'alice', via: 'password' as const, sid: newSessionId(), exp: 2_000 };

/** The spellings Buffer.from(…, 'base64url') reads as the same bytes as `mac`. */
function sameBytesOtherwise(mac: string): string[] {
  const last = mac.at(-1)!;
  const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_';
  // 43 characters hold 258 bits of a 256-bit MAC: the last one's two low bits are unused.
  const base = alphabet.indexOf(last) & ~3;
  const twins = [0, 1, 2, 3].map((n) => alphabet[base + n]!).filter((c) => c !== last);
  return [
    `${mac}!`,
    `${mac}=`,
    `${mac}==`,
    `${mac} `,
    `${mac}%`,
    ` ${mac}`,
    ...twins.map((c) => `${mac.slice(0, -1)}${c}`),
  ];
}

describe('session cookie format', () => {
  it('accepts the cookie as issued and no other spelling of its MAC', () => {
    const cookie = keys.sign(payload);
    expect(keys.verify(cookie, 0)).toEqual(payload);
    const [body, mac] = cookie.split('.') as [string, string];
    for (const other of sameBytesOtherwise(mac)) {
      expect(Buffer.from(other, 'base64url').equals(Buffer.from(mac, 'base64url'))).toBe(true);
      expect(keys.verify(`${body}.${other}`, 0), JSON.stringify(other)).toBeNull();
    }
    for (const bad of [`${cookie}.x`, `${body}..${mac}`, `${body}=.${mac}`, `${body}.${mac}.`])
      expect(keys.verify(bad, 0), bad).toBeNull();
  });

  it('accepts a CSRF token as issued and no other spelling', () => {
    const token = csrfToken(keys, 'sid\0one');
    expect(csrfValid(keys, 'sid\0one', token)).toBe(true);
    for (const other of sameBytesOtherwise(token))
      expect(csrfValid(keys, 'sid\0one', other), other).toBe(false);
  });

  it('accepts a session only while its binding is the one it was signed with', () => {
    const cookie = keys.sign(payload, 'user\0alice\0hash-1');
    expect(keys.verify(cookie, 0, () => 'user\0alice\0hash-1')).toEqual(payload);
    // A new password: a new entry.
    expect(keys.verify(cookie, 0, () => 'user\0alice\0hash-2')).toBeNull();
    // Removed: nobody to bind to.
    expect(keys.verify(cookie, 0, () => null)).toBeNull();
    expect(keys.verify(cookie, 0)).toBeNull();
    // Expiry still counts.
    expect(keys.verify(cookie, 2_000, () => 'user\0alice\0hash-1')).toBeNull();
  });
});
