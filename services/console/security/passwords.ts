import { randomBytes, scrypt, timingSafeEqual } from 'node:crypto';
import { HookgateError } from '../../core/errors.ts';

/**
 * Console passwords are stored as `scrypt$N$r$p$salt$hash` (salt and hash in base64url), made by
 * `hookgate console hash-password`. scrypt is memory-hard, so a leaked Secret costs an attacker
 * dearly per guess; the parameters travel with the hash, so they can be raised later.
 */
const FORMAT = /^scrypt\$(\d+)\$(\d+)\$(\d+)\$([A-Za-z0-9_-]{16,})\$([A-Za-z0-9_-]{43,})$/;

export const SCRYPT_DEFAULTS = { N: 2 ** 15, r: 8, p: 1 } as const;
const KEY_BYTES = 32;

export interface PasswordHash {
  readonly N: number;
  readonly r: number;
  readonly p: number;
  readonly salt: Buffer;
  readonly hash: Buffer;
}

/** Parses a stored hash; null when it is not one this version can check. */
export function parsePasswordHash(text: string): PasswordHash | null {
  const match = FORMAT.exec(text.trim());
  if (!match) return null;
  const [N, r, p] = [Number(match[1]), Number(match[2]), Number(match[3])];
  // Bounds: a power of two N the server can afford per sign-in (at most 2^20, 1 GiB with r 8).
  if (!Number.isInteger(Math.log2(N)) || N < 2 ** 14 || N > 2 ** 20) return null;
  if (r < 1 || r > 32 || p < 1 || p > 16) return null;
  const hash = Buffer.from(match[5]!, 'base64url');
  if (hash.length < KEY_BYTES) return null;
  return { N, r, p, salt: Buffer.from(match[4]!, 'base64url'), hash };
}

function derive(password: string, salt: Buffer, params: { N: number; r: number; p: number }, length: number) {
  return new Promise<Buffer>((resolve, reject) => {
    scrypt(
      password.normalize('NFC'),
      salt,
      length,
      { N: params.N, r: params.r, p: params.p, maxmem: 256 * params.N * params.r + 16 * 1024 * 1024 },
      (error, key) => (error ? reject(error) : resolve(key)),
    );
  });
}

export async function hashPassword(password: string, params = SCRYPT_DEFAULTS): Promise<string> {
  if (password.length < 12) {
    throw new HookgateError('usage_invalid', 'A console password needs at least 12 characters.');
  }
  const salt = randomBytes(16);
  const hash = await derive(password, salt, params, KEY_BYTES);
  return `scrypt$${params.N}$${params.r}$${params.p}$${salt.toString('base64url')}$${hash.toString('base64url')}`;
}

/** Constant-time comparison of the derived key against the stored one. */
export async function verifyPassword(password: string, stored: PasswordHash): Promise<boolean> {
  const derived = await derive(password, stored.salt, stored, stored.hash.length);
  return derived.length === stored.hash.length && timingSafeEqual(derived, stored.hash);
}

/**
 * Checked against when the user name is unknown, so an unknown name costs the same time as a
 * wrong password and the answer does not tell which names exist.
 */
export const DECOY_HASH: PasswordHash = {
  ...SCRYPT_DEFAULTS,
  salt: randomBytes(16),
  hash: randomBytes(KEY_BYTES),
};
