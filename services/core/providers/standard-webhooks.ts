import { createSecretKey, type KeyObject } from 'node:crypto';
import { anyMatch, decodeBase64, decodeBase64Key, hmac } from './crypto.ts';
import { identifyEvent } from './extract.ts';
import { headerRules, headerValue } from './headers.ts';
import { evaluatePointer } from './json-pointer.ts';
import { publicKey, verifyWith } from './keys.ts';
import { reject } from './rejection.ts';
import { checkTolerance, parseUnixSeconds } from './timestamp.ts';
import type { ExtractOverrides, HeaderBag, Provider } from './types.ts';

const SECRET_PREFIX = 'whsec_';
/** Standard Webhooks' asymmetric variant: `whpk_<base64 Ed25519 public key>`, signatures tagged `v1a`. */
export const PUBLIC_KEY_PREFIX = 'whpk_';

interface HeaderSet {
  readonly id: string;
  readonly timestamp: string;
  readonly signature: string;
}

const SVIX: HeaderSet = { id: 'svix-id', timestamp: 'svix-timestamp', signature: 'svix-signature' };
const STANDARD: HeaderSet = {
  id: 'webhook-id',
  timestamp: 'webhook-timestamp',
  signature: 'webhook-signature',
};

const RULES = headerRules({
  identity: [SVIX.id, SVIX.timestamp, STANDARD.id, STANDARD.timestamp],
  secret: [SVIX.signature, STANDARD.signature],
});

/**
 * Svix sends `svix-*`, other senders `webhook-*`. The three headers are taken as one set
 * (never mixed) because they are signed together; `svix-*` wins, as Svix's SDK does.
 */
function headerSet(headers: HeaderBag): HeaderSet {
  const anySvix = [SVIX.id, SVIX.timestamp, SVIX.signature].some((name) => headers[name] !== undefined);
  return anySvix ? SVIX : STANDARD;
}

/** `whsec_<base64>`, or bare base64 as some senders hand it out; null when it is not base64. */
export function standardWebhooksKey(secret: string): Buffer | null {
  return decodeBase64Key(secret.startsWith(SECRET_PREFIX) ? secret.slice(SECRET_PREFIX.length) : secret);
}

/** Whether a configured entry is a `whpk_` public key (checked with v1a signatures, never with v1). */
export function isStandardWebhooksPublicKey(entry: string): boolean {
  return entry.startsWith(PUBLIC_KEY_PREFIX);
}

const preparedKeys = new Map<string, KeyObject | null>();

/** The decoded key, prepared once per configured secret (see crypto.ts). */
function preparedKey(secret: string): KeyObject | null {
  if (isStandardWebhooksPublicKey(secret)) return null;
  let key = preparedKeys.get(secret);
  if (key === undefined) {
    const bytes = standardWebhooksKey(secret);
    key = bytes === null ? null : createSecretKey(bytes);
    if (preparedKeys.size >= 1024) preparedKeys.clear();
    preparedKeys.set(secret, key);
  }
  return key;
}

/** The `v1` (HMAC) and `v1a` (Ed25519) entries of a space-separated signature list; other versions are ignored. */
function signatures(list: string): { v1: Buffer[]; v1a: Buffer[] } {
  const found = { v1: [] as Buffer[], v1a: [] as Buffer[] };
  // Two signature headers reach us joined by ", " (Node's rule for repeated headers), so an
  // entry may carry that trailing comma; base64 never ends with one.
  for (const entry of list.split(' ')) {
    const comma = entry.indexOf(',');
    if (comma < 0) continue;
    const version = entry.slice(0, comma);
    if (version !== 'v1' && version !== 'v1a') continue;
    const bytes = decodeBase64(entry.slice(comma + 1).replace(/,$/, ''));
    // A malformed entry cannot match; another entry still may.
    if (bytes !== null) found[version].push(bytes);
  }
  return found;
}

export function createStandardWebhooksProvider(name: string, overrides?: ExtractOverrides): Provider {
  return {
    name,
    headerRules: RULES,
    verify(request) {
      const names = headerSet(request.headers);
      const signatureList = headerValue(request.headers, names.signature);
      if (signatureList === undefined) {
        return reject('signature_missing', `The request has no ${names.signature} header.`);
      }
      // A missing id is signed as empty: verification answers first (401 for a forgery), and a
      // delivery authentic without an id is refused by identify as event_id_missing.
      const id = headerValue(request.headers, names.id) ?? '';
      const rawTimestamp = headerValue(request.headers, names.timestamp);
      const timestamp = parseUnixSeconds(rawTimestamp, `${names.timestamp} header`);
      if (!timestamp.ok) return timestamp;

      const candidates = signatures(signatureList);
      if (candidates.v1.length === 0 && candidates.v1a.length === 0) {
        return reject(
          'signature_invalid',
          `The ${names.signature} header has no well-formed v1 or v1a signature.`,
        );
      }
      const keys = request.secrets.map(preparedKey).filter((key) => key !== null);
      const signedPrefix = `${id}.${rawTimestamp}.`;
      const expected = keys.map((key) => hmac('sha256', key, [signedPrefix, request.rawBody]));
      let matched = anyMatch(candidates.v1, expected);
      if (candidates.v1a.length > 0) {
        const signed = Buffer.concat([Buffer.from(signedPrefix), request.rawBody]);
        for (const entry of request.secrets) {
          const key = isStandardWebhooksPublicKey(entry) ? publicKey('ed25519', entry) : null;
          if (key === null) continue;
          for (const candidate of candidates.v1a)
            if (verifyWith('ed25519', key, signed, candidate)) matched = true;
        }
      }
      if (!matched) {
        // Nothing about the configured secrets is said here: the caller is not authenticated.
        return reject(
          'signature_invalid',
          `The ${names.signature} header has no v1 or v1a signature that matches any configured secret or public key.`,
        );
      }
      // Checked after the signature so that this code always means an authentic but stale or early delivery.
      return (
        checkTolerance(
          timestamp.seconds,
          request.nowMs,
          request.toleranceSeconds,
          `${names.timestamp} header`,
        ) ?? {
          ok: true,
        }
      );
    },
    identify({ headers, body }) {
      const names = headerSet(headers);
      return identifyEvent(body, overrides, {
        eventId: { label: `the ${names.id} header`, read: () => headerValue(headers, names.id) },
        eventType: { label: 'the body field /type', read: () => evaluatePointer(body, '/type') },
        headers: {},
      });
    },
  };
}
