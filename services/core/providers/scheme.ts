import { createHash, createSecretKey, type KeyObject } from 'node:crypto';
import { anyMatch, decodeBase64, decodeBase64Key, decodeSignature, hmac, utf8Key } from './crypto.ts';
import { identifyEvent, type Source } from './extract.ts';
import { eventHeaders, type HeaderRules, headerRules, headerValue } from './headers.ts';
import { evaluatePointer } from './json-pointer.ts';
import { type AsymmetricAlgorithm, publicKey, verifyWith } from './keys.ts';
import { reject } from './rejection.ts';
import type { ContentPart, FieldSource, IdentitySpec, SchemeSpec } from './scheme-spec.ts';
import { standardWebhooksKey } from './standard-webhooks.ts';
import { checkInstant, type ParsedInstant, parseTimestamp } from './timestamp.ts';
import type {
  ExtractOverrides,
  HandshakeRequest,
  Identification,
  Provider,
  Rejection,
  ReplyContent,
  Verdict,
  VerifiedDelivery,
  VerifyRequest,
} from './types.ts';

/** What a preset adds to its scheme beyond data: answers to the provider's questions. */
export interface SchemeHooks {
  /** A verified delivery that is a question, not an event (Zoom's URL validation, Discord's PING). */
  readonly reply?: (delivery: VerifiedDelivery) => ReplyContent | null;
  readonly handshake?: (request: HandshakeRequest) => ReplyContent | null;
  readonly handshakeMethods?: readonly string[];
  readonly decodeBody?: (text: string) => unknown;
}

export interface SchemeSettings {
  /** The URL the provider signs, exactly as configured at the provider; variants are tried in turn (Twilio's ports). */
  readonly urls?: readonly string[];
  readonly overrides?: ExtractOverrides | undefined;
  readonly hooks?: SchemeHooks;
}

const ASYMMETRIC = new Set<string>(['ed25519', 'ecdsa-p256-sha256', 'rsa-sha256']);

/** Header names as the spec wrote them, for messages: `X-Hub-Signature`. */
function named(headers: readonly string[]): string {
  return headers.length === 1 ? `${headers[0]} header` : `${headers.join(' or ')} header`;
}

const secretKeys = new Map<string, KeyObject | null>();

/** An HMAC secret as key bytes per the scheme's format, prepared once. */
function hmacKey(format: SchemeSpec['secretFormat'], secret: string): KeyObject | null {
  if (format === undefined || format === 'utf8') return utf8Key(secret);
  const cacheKey = `${format}\u0000${secret}`;
  let key = secretKeys.get(cacheKey);
  if (key === undefined) {
    // A configured key is operator input: hex in either case, base64 in either alphabet.
    const bytes =
      format === 'whsec'
        ? standardWebhooksKey(secret)
        : format === 'hex'
          ? /^(?:[0-9a-fA-F]{2})+$/.test(secret)
            ? Buffer.from(secret, 'hex')
            : null
          : decodeBase64Key(secret);
    key = bytes === null || bytes.length === 0 ? null : createSecretKey(bytes);
    if (secretKeys.size >= 1024) secretKeys.clear();
    secretKeys.set(cacheKey, key);
  }
  return key;
}

/** Twilio's form parameters: names sorted, each followed by its (distinct, sorted) values. */
export function sortedFormParams(body: Buffer): string {
  const params = new URLSearchParams(body.toString('utf8'));
  const values = new Map<string, string[]>();
  for (const [name, value] of params) {
    const list = values.get(name);
    if (list) list.push(value);
    else values.set(name, [value]);
  }
  let out = '';
  for (const name of [...values.keys()].sort()) {
    for (const value of [...new Set(values.get(name))].sort()) out += name + value;
  }
  return out;
}

interface Parsed {
  readonly candidates: readonly Buffer[];
  readonly timestamp: string | undefined;
}

/** The signatures (and a list's timestamp) the signature headers carry. */
function parseSignatures(spec: SchemeSpec, values: readonly string[]): Parsed | Rejection {
  const candidates: Buffer[] = [];
  let timestamp: string | undefined;
  const decode = (text: string): Buffer | null => {
    if (spec.encoding === 'text') return text === '' ? null : Buffer.from(text, 'utf8');
    // Token schemes in base64 (basic auth) compare the decoded bytes with the secret.
    if (spec.algorithm === 'token' && spec.encoding === 'base64') return decodeBase64(text);
    if (spec.anyCaseHex && spec.encoding === 'hex') return decodeSignature('hex', text.toLowerCase());
    return decodeSignature(spec.encoding, text);
  };
  for (const value of values) {
    const prefix = spec.prefix ?? '';
    if (!value.startsWith(prefix)) continue;
    const rest = value.slice(prefix.length);
    const list = spec.list;
    if (list === undefined) {
      const bytes = decode(rest);
      if (bytes !== null) candidates.push(bytes);
      continue;
    }
    // Entries are split exactly as the providers' libraries split them: no trimming, so
    // `t=1, v1=…` (a space after the comma) names an entry ` v1`, which is ignored as theirs do.
    for (const entry of rest.split(list.separator)) {
      const at = entry.indexOf(list.assign);
      if (at < 0) continue;
      const name = entry.slice(0, at);
      const text = entry.slice(at + list.assign.length);
      if (list.timestamp !== undefined && name === list.timestamp) {
        // Two timestamps would make it ambiguous which one was signed.
        if (timestamp !== undefined) {
          return reject('timestamp_invalid', `The ${named(spec.headers)} carries more than one timestamp.`);
        }
        timestamp = text;
      } else if (list.versions.includes(name)) {
        const bytes = decode(text);
        if (bytes !== null) candidates.push(bytes);
      }
    }
  }
  return { candidates, timestamp };
}

function timestampSource(spec: SchemeSpec): string {
  const from = spec.timestamp?.from;
  if (from === undefined) return 'timestamp';
  if ('header' in from) return `${from.header} header`;
  if ('pointer' in from) return `body field ${from.pointer}`;
  return `timestamp (${spec.list?.timestamp}=) of the ${named(spec.headers)}`;
}

/** The signed content for one URL variant. */
function content(
  spec: SchemeSpec,
  request: VerifyRequest,
  timestamp: string | undefined,
  url: string,
): Buffer {
  const pieces: (string | Buffer)[] = spec.content.map((piece: ContentPart) => {
    if ('literal' in piece) return piece.literal;
    if ('header' in piece) return request.headers[piece.header.toLowerCase()] ?? '';
    switch (piece.part) {
      case 'body':
        return request.rawBody;
      case 'timestamp':
        return timestamp ?? '';
      case 'id':
        // A missing id is signed as empty: a forgery still fails, and an authentic delivery
        // without one is refused by identify as event_id_missing.
        return spec.idHeader === undefined ? '' : (headerValue(request.headers, spec.idHeader) ?? '');
      case 'method':
        return 'POST';
      case 'url':
        return url;
      case 'form-params':
        return sortedFormParams(request.rawBody);
    }
    return '';
  });
  return Buffer.concat(pieces.map((piece) => (typeof piece === 'string' ? Buffer.from(piece) : piece)));
}

/** Whether any candidate verifies under any configured secret or key, with no early exit. */
function matches(
  spec: SchemeSpec,
  request: VerifyRequest,
  candidates: readonly Buffer[],
  signed: readonly Buffer[],
): boolean {
  if (spec.algorithm === 'token') {
    return anyMatch(
      candidates,
      request.secrets.map((secret) => Buffer.from(secret, 'utf8')),
    );
  }
  if (ASYMMETRIC.has(spec.algorithm)) {
    const algorithm = spec.algorithm as AsymmetricAlgorithm;
    let ok = false;
    for (const text of request.secrets) {
      const key = publicKey(algorithm, text);
      if (key === null) continue;
      for (const data of signed)
        for (const candidate of candidates) if (verifyWith(algorithm, key, data, candidate)) ok = true;
    }
    return ok;
  }
  const algorithm =
    spec.algorithm === 'hmac-sha1' ? 'sha1' : spec.algorithm === 'hmac-sha512' ? 'sha512' : 'sha256';
  const expected: Buffer[] = [];
  for (const secret of request.secrets) {
    const key = hmacKey(spec.secretFormat, secret);
    if (key === null) continue;
    for (const data of signed) expected.push(hmac(algorithm, key, [data]));
  }
  return anyMatch(candidates, expected);
}

/** Verification of any scheme: raw bytes, every secret or key against every signature, timestamp both ways. */
export function verifyScheme(spec: SchemeSpec, request: VerifyRequest, urls: readonly string[]): Verdict {
  const values = spec.headers
    .map((name) => headerValue(request.headers, name))
    .filter((value) => value !== undefined);
  if (values.length === 0) return reject('signature_missing', `The request has no ${named(spec.headers)}.`);
  const parsed = parseSignatures(spec, values);
  if ('ok' in parsed) return parsed;

  const source = timestampSource(spec);
  let instant: ParsedInstant | undefined;
  let rawTimestamp: string | undefined;
  const from = spec.timestamp?.from;
  if (spec.timestamp !== undefined && from !== undefined && !('pointer' in from)) {
    rawTimestamp = 'header' in from ? headerValue(request.headers, from.header) : parsed.timestamp;
    instant = parseTimestamp(rawTimestamp, spec.timestamp.unit, source);
    if (!instant.ok) return instant;
  }
  if (parsed.candidates.length === 0) {
    return reject(
      'signature_invalid',
      spec.algorithm === 'token'
        ? `The ${named(spec.headers)} is not of the expected form.`
        : `The ${named(spec.headers)} has no well-formed signature${spec.prefix ? ` (${spec.prefix}<${spec.encoding}>)` : ''}.`,
    );
  }
  const signed =
    spec.algorithm === 'token'
      ? []
      : (urls.length > 0 ? urls : ['']).map((url) => content(spec, request, rawTimestamp, url));
  if (!matches(spec, request, parsed.candidates, signed)) {
    // Nothing about the configured secrets is said here: the caller is not authenticated.
    return reject(
      'signature_invalid',
      spec.algorithm === 'token'
        ? `The ${named(spec.headers)} does not match any configured secret.`
        : `The ${named(spec.headers)} has no signature that matches any configured ${ASYMMETRIC.has(spec.algorithm) ? 'public key' : 'secret'}.`,
    );
  }
  // A timestamp inside the body (Linear) is read only now that the body is authentic.
  if (spec.timestamp !== undefined && from !== undefined && 'pointer' in from) {
    let body: unknown;
    try {
      body = JSON.parse(request.rawBody.toString('utf8'));
    } catch {
      return reject('body_not_json', 'The signature is valid but the body is not UTF-8 JSON.');
    }
    instant = parseTimestamp(evaluatePointer(body, from.pointer), spec.timestamp.unit, source);
    if (!instant.ok) return instant;
  }
  // Checked after the signature so that this code always means an authentic but stale or early delivery.
  if (instant?.ok) {
    return checkInstant(instant, request.nowMs, request.toleranceSeconds, source) ?? { ok: true };
  }
  return { ok: true };
}

/** Whether the scheme's signature covers a header (so a value read from it is signed). */
function signsHeader(spec: SchemeSpec, name: string): boolean {
  const lower = name.toLowerCase();
  return spec.content.some(
    (piece) =>
      ('header' in piece && piece.header.toLowerCase() === lower) ||
      ('part' in piece && piece.part === 'id' && spec.idHeader?.toLowerCase() === lower),
  );
}

function signsBody(spec: SchemeSpec): boolean {
  return spec.algorithm !== 'token' && spec.content.some((piece) => 'part' in piece && piece.part === 'body');
}

/** Reads a field from a verified delivery; `unsigned` says whether the signature covers it. */
export function readField(source: FieldSource, delivery: VerifiedDelivery, eventType?: string): unknown {
  if ('header' in source) return headerValue(delivery.headers, source.header);
  if ('pointer' in source) return evaluatePointer(delivery.body, source.pointer);
  if ('literal' in source) return source.literal;
  if ('digest' in source)
    return delivery.rawBody === undefined
      ? undefined
      : `sha256:${createHash('sha256').update(delivery.rawBody).digest('hex')}`;
  if ('typePrefix' in source) {
    if (eventType === undefined) return undefined;
    const at = eventType.indexOf(source.typePrefix);
    return at > 0 ? eventType.slice(0, at) : undefined;
  }
  if ('ifPresent' in source) {
    const present = evaluatePointer(delivery.body, source.ifPresent) !== undefined;
    return readField(present ? source.present : source.otherwise, delivery, eventType);
  }
  if ('first' in source) {
    for (const inner of source.first) {
      const value = readField(inner, delivery, eventType);
      if (value !== undefined && value !== null && value !== '') return value;
    }
    return undefined;
  }
  const parts: string[] = [];
  for (const [index, inner] of source.join.entries()) {
    const value = readField(inner, delivery, eventType);
    if (typeof value === 'string' && value !== '') parts.push(value);
    else if (typeof value === 'number' && Number.isSafeInteger(value)) parts.push(String(value));
    else if (index === 0) return undefined;
  }
  return parts.join(source.separator);
}

/** How a field is named in rejection messages. */
export function describeField(source: FieldSource): string {
  if ('header' in source) return `the ${source.header} header`;
  if ('pointer' in source) return `the body field ${source.pointer}`;
  if ('literal' in source) return `the constant "${source.literal}"`;
  if ('digest' in source) return "the body's SHA-256";
  if ('typePrefix' in source) return `the event type before "${source.typePrefix}"`;
  if ('first' in source) return source.first.map(describeField).join(' or ');
  if ('ifPresent' in source)
    return `${describeField(source.present)} (with ${source.ifPresent}), else ${describeField(source.otherwise)}`;
  return source.join.map(describeField).join(` + "${source.separator}" + `);
}

/** Whether a value read from `source` may be other than what was signed. */
export function fieldUnsigned(spec: SchemeSpec, source: FieldSource, delivery: VerifiedDelivery): boolean {
  if ('header' in source) return !signsHeader(spec, source.header);
  if ('pointer' in source) return !signsBody(spec);
  if ('literal' in source || 'digest' in source || 'typePrefix' in source) return false;
  if ('ifPresent' in source) {
    const present = evaluatePointer(delivery.body, source.ifPresent) !== undefined;
    return fieldUnsigned(spec, present ? source.present : source.otherwise, delivery);
  }
  if ('first' in source) {
    // The source actually used decides.
    for (const inner of source.first) {
      const value = readField(inner, delivery);
      if (value !== undefined && value !== null && value !== '') return fieldUnsigned(spec, inner, delivery);
    }
    return false;
  }
  return source.join.some((inner) => fieldUnsigned(spec, inner, delivery));
}

function toSource(source: FieldSource, delivery: VerifiedDelivery, unsigned = false): Source {
  return { label: describeField(source), read: () => readField(source, delivery), unsigned };
}

/** Identification of any scheme's delivery from its identity spec. */
export function identifyScheme(
  spec: SchemeSpec,
  identity: IdentitySpec,
  delivery: VerifiedDelivery,
  overrides: ExtractOverrides | undefined,
  rules: HeaderRules = schemeHeaderRules(spec, identity),
): Identification {
  const entityType = identity.entityType;
  return identifyEvent(delivery.body, overrides, {
    eventId: toSource(identity.eventId, delivery, fieldUnsigned(spec, identity.eventId, delivery)),
    eventType: toSource(identity.eventType, delivery),
    ...(identity.eventTypeFallback === undefined ? {} : { eventTypeFallback: identity.eventTypeFallback }),
    ...(entityType === undefined
      ? {}
      : {
          entityType: {
            label: describeField(entityType),
            read: (eventType: string) => readField(entityType, delivery, eventType),
          },
        }),
    ...(identity.entityId === undefined ? {} : { entityId: toSource(identity.entityId, delivery) }),
    ...(identity.version === undefined ? {} : { version: toSource(identity.version, delivery) }),
    headers: eventHeaders(delivery.headers, rules),
  });
}

/** The headers a field may be read from (every branch of a `first`, `ifPresent` or `join`). */
function fieldHeaders(source: FieldSource | undefined): string[] {
  if (source === undefined) return [];
  if ('header' in source) return [source.header];
  if ('first' in source) return source.first.flatMap(fieldHeaders);
  if ('join' in source) return source.join.flatMap(fieldHeaders);
  if ('ifPresent' in source) return [...fieldHeaders(source.present), ...fieldHeaders(source.otherwise)];
  return [];
}

/**
 * A scheme's header rules, from its definition alone: the signature (or token) headers are secret;
 * the identity fields', the timestamp's and the signed content's headers identify; `keep` is read.
 * A preset or a `scheme` configuration cannot leave them out.
 */
export function schemeHeaderRules(spec: SchemeSpec, identity: IdentitySpec): HeaderRules {
  const from = spec.timestamp?.from;
  return headerRules({
    secret: spec.headers,
    identity: [
      ...[
        identity.eventId,
        identity.eventType,
        identity.entityType,
        identity.entityId,
        identity.version,
      ].flatMap(fieldHeaders),
      from !== undefined && 'header' in from ? from.header : undefined,
      spec.idHeader,
      ...spec.content.flatMap((piece) => ('header' in piece ? [piece.header] : [])),
    ],
    delivery: identity.keep ?? [],
  });
}

/** A provider from a scheme and an identity spec: every preset and the `scheme` provider. */
export function createSchemeProvider(
  name: string,
  spec: SchemeSpec,
  identity: IdentitySpec,
  settings: SchemeSettings = {},
): Provider {
  const urls = settings.urls ?? [];
  const hooks = settings.hooks ?? {};
  const rules = schemeHeaderRules(spec, identity);
  const provider: Provider = {
    name,
    headerRules: rules,
    verify: (request) => verifyScheme(spec, request, urls),
    identify(delivery) {
      const reply = hooks.reply?.(delivery);
      if (reply) return { ok: true, reply };
      return identifyScheme(spec, identity, delivery, settings.overrides, rules);
    },
    ...(hooks.handshake ? { handshake: hooks.handshake } : {}),
    ...(hooks.handshakeMethods ? { handshakeMethods: hooks.handshakeMethods } : {}),
    ...(hooks.decodeBody ? { decodeBody: hooks.decodeBody } : {}),
  };
  return provider;
}
