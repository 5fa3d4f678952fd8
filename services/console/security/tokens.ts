import { createHash, timingSafeEqual } from 'node:crypto';

/**
 * Access tokens (for scripts: `Authorization: Bearer <token>`) are stored as the hex SHA-256 of
 * the token. A token is random and long (at least 32 characters, refused otherwise), so a fast
 * hash is enough, and it is checked on every request, where scrypt's cost would be paid each time.
 */
export function tokenDigest(token: string): Buffer {
  return createHash('sha256').update(token, 'utf8').digest();
}

export function tokenMatches(token: string, digestHex: string): boolean {
  const expected = Buffer.from(digestHex, 'hex');
  const actual = tokenDigest(token);
  return expected.length === actual.length && timingSafeEqual(expected, actual);
}
