import { createPublicKey, type KeyObject, verify } from 'node:crypto';

/** The public-key signature algorithms hookgate verifies. */
export type AsymmetricAlgorithm = 'ed25519' | 'ecdsa-p256-sha256' | 'rsa-sha256';

// An Ed25519 SubjectPublicKeyInfo is this fixed prefix followed by the 32 raw key bytes.
const ED25519_SPKI_PREFIX = Buffer.from('302a300506032b6570032100', 'hex');
const RAW_ED25519_HEX = /^[0-9a-fA-F]{64}$/;
const BASE64 = /^[A-Za-z0-9+/_-]+={0,2}$/;
const WHPK = 'whpk_';

function fromDer(der: Buffer): KeyObject | null {
  try {
    return createPublicKey({ key: der, format: 'der', type: 'spki' });
  } catch {
    return null;
  }
}

function rawEd25519(bytes: Buffer): KeyObject | null {
  return bytes.length === 32 ? fromDer(Buffer.concat([ED25519_SPKI_PREFIX, bytes])) : null;
}

/**
 * A configured public key in any of the spellings providers hand out: PEM, base64 DER
 * (SubjectPublicKeyInfo, as SendGrid shows it), and for Ed25519 also the 32 raw bytes in hex
 * (Discord) or base64 (Standard Webhooks' `whpk_…`).
 */
function parse(text: string): KeyObject | null {
  const trimmed = text.trim();
  if (trimmed.startsWith('-----BEGIN')) {
    try {
      return createPublicKey({ key: trimmed, format: 'pem' });
    } catch {
      return null;
    }
  }
  if (RAW_ED25519_HEX.test(trimmed)) return rawEd25519(Buffer.from(trimmed, 'hex'));
  const base64 = trimmed.startsWith(WHPK) ? trimmed.slice(WHPK.length) : trimmed;
  if (!BASE64.test(base64)) return null;
  const bytes = Buffer.from(base64.replace(/-/g, '+').replace(/_/g, '/'), 'base64');
  return rawEd25519(bytes) ?? fromDer(bytes);
}

function fits(key: KeyObject, algorithm: AsymmetricAlgorithm): boolean {
  if (algorithm === 'ed25519') return key.asymmetricKeyType === 'ed25519';
  if (algorithm === 'ecdsa-p256-sha256')
    return key.asymmetricKeyType === 'ec' && key.asymmetricKeyDetails?.namedCurve === 'prime256v1';
  // Below 2048 bits RSA is not a signature anyone should accept.
  return key.asymmetricKeyType === 'rsa' && (key.asymmetricKeyDetails?.modulusLength ?? 0) >= 2048;
}

const KEY_CACHE_LIMIT = 1024;
const keyCache = new Map<string, KeyObject | null>();

/** The key, parsed once per configured text, or null when it is not a key of that algorithm. */
export function publicKey(algorithm: AsymmetricAlgorithm, text: string): KeyObject | null {
  const cacheKey = `${algorithm}\u0000${text}`;
  let key = keyCache.get(cacheKey);
  if (key === undefined) {
    const parsed = parse(text);
    key = parsed !== null && fits(parsed, algorithm) ? parsed : null;
    if (keyCache.size >= KEY_CACHE_LIMIT) keyCache.clear();
    keyCache.set(cacheKey, key);
  }
  return key;
}

/** What a key of each algorithm looks like, for configuration errors. */
export const KEY_SHAPES: Readonly<Record<AsymmetricAlgorithm, string>> = {
  ed25519: 'an Ed25519 public key (64 hex digits, whpk_ or base64 bytes, or PEM)',
  'ecdsa-p256-sha256': 'an ECDSA P-256 public key (base64 DER or PEM)',
  'rsa-sha256': 'an RSA public key of at least 2048 bits (base64 DER or PEM)',
};

/**
 * Whether `signature` over `data` verifies under `key`. A signature that cannot even be parsed
 * (wrong length, bad DER) is a mismatch, never an exception. Public-key verification holds no
 * secret, so it needs no constant-time comparison of its own.
 */
export function verifyWith(
  algorithm: AsymmetricAlgorithm,
  key: KeyObject,
  data: Buffer,
  signature: Uint8Array,
): boolean {
  try {
    if (algorithm === 'ed25519') return signature.length === 64 && verify(null, data, key, signature);
    if (algorithm === 'ecdsa-p256-sha256')
      return verify('sha256', data, { key, dsaEncoding: 'der' }, signature);
    return verify('sha256', data, key, signature);
  } catch {
    return false;
  }
}
