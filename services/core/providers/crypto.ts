import { createHmac, createSecretKey, type KeyObject, timingSafeEqual } from 'node:crypto';

export type HmacAlgorithm = 'sha1' | 'sha256' | 'sha512';

// Turning key material into a KeyObject is most of the cost of a short HMAC; configured
// secrets are few and fixed, so each is prepared once. Bounded in case of many endpoints.
const KEY_CACHE_LIMIT = 1024;
const keyCache = new Map<string, KeyObject>();

/** A prepared HMAC key for a UTF-8 secret (Stripe, GitHub, Shopify, Slack, Paddle, hmac). */
export function utf8Key(secret: string): KeyObject {
  let key = keyCache.get(secret);
  if (key === undefined) {
    key = createSecretKey(Buffer.from(secret, 'utf8'));
    if (keyCache.size >= KEY_CACHE_LIMIT) keyCache.clear();
    keyCache.set(secret, key);
  }
  return key;
}

/** HMAC over the concatenation of `parts`, so signed content never needs a string round trip of the body. */
export function hmac(
  algorithm: HmacAlgorithm,
  key: string | Uint8Array | KeyObject,
  parts: readonly (string | Uint8Array)[],
): Buffer {
  const mac = createHmac(algorithm, typeof key === 'string' ? utf8Key(key) : key);
  for (const part of parts) mac.update(part);
  return mac.digest();
}

/**
 * Constant-time equality of two byte strings. The length check leaks only the length, which
 * is public (a digest size); `timingSafeEqual` throws on unequal lengths, hence the check.
 */
export function bytesEqual(a: Uint8Array, b: Uint8Array): boolean {
  if (a.length !== b.length) return false;
  return timingSafeEqual(a, b);
}

/** True when any candidate signature equals any expected digest; every pair is compared. */
export function anyMatch(candidates: readonly Uint8Array[], expected: readonly Uint8Array[]): boolean {
  let matched = false;
  for (const candidate of candidates) {
    for (const digest of expected) {
      // No early exit: the time taken should not reveal which secret or entry matched.
      if (bytesEqual(candidate, digest)) matched = true;
    }
  }
  return matched;
}

// Lower case only: every provider sends lower-case hex and every official library compares the
// text it computed (lower case), so an upper-case spelling is refused as they refuse it.
const HEX = /^(?:[0-9a-f]{2})+$/;

/**
 * Strict lower-case hex: Buffer.from(…, 'hex') silently stops at the first bad digit, so
 * validate first.
 */
export function decodeHex(text: string): Buffer | null {
  if (!HEX.test(text)) return null;
  return Buffer.from(text, 'hex');
}

/**
 * Strict, canonical, padded standard base64 for signatures: Node's decoder skips invalid
 * characters, which would let mangled input decode to something.
 */
export function decodeBase64(text: string): Buffer | null {
  if (text.length === 0) return null;
  const bytes = Buffer.from(text, 'base64');
  // Node encodes only the canonical padded standard alphabet, so this one comparison refuses
  // skipped characters, the url alphabet, missing padding and non-zero trailing bits alike.
  if (bytes.toString('base64') !== text) return null;
  return bytes;
}

/** Strict, canonical, unpadded base64url (RFC 4648 §5), for the schemes that sign with it. */
export function decodeBase64Url(text: string): Buffer | null {
  if (text.length === 0) return null;
  const bytes = Buffer.from(text, 'base64url');
  if (bytes.toString('base64url') !== text) return null;
  return bytes;
}

export type SignatureEncoding = 'hex' | 'base64' | 'base64url';

export function decodeSignature(encoding: SignatureEncoding, text: string): Buffer | null {
  if (encoding === 'hex') return decodeHex(text);
  if (encoding === 'base64') return decodeBase64(text);
  return decodeBase64Url(text);
}

const BASE64_KEY = /^[A-Za-z0-9+/_-]+={0,2}$/;

/**
 * Lenient base64 for configured keys (padding optional, url alphabet allowed): a key is
 * operator input, not attacker input, and refusing a spelling the provider's SDK accepts
 * would fail every delivery.
 */
export function decodeBase64Key(text: string): Buffer | null {
  if (!BASE64_KEY.test(text)) return null;
  const bytes = Buffer.from(text.replace(/-/g, '+').replace(/_/g, '/'), 'base64');
  return bytes.length === 0 ? null : bytes;
}
