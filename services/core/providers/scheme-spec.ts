import type { SignatureEncoding } from './crypto.ts';
import type { AsymmetricAlgorithm } from './keys.ts';
import type { TimestampUnit } from './timestamp.ts';

/**
 * A signature scheme as data: what is signed, how the signature travels, which keys check it.
 * The presets (presets.ts) and the `scheme` provider's configuration both come down to this.
 */
export type SchemeAlgorithm =
  | 'hmac-sha1'
  | 'hmac-sha256'
  | 'hmac-sha512'
  | AsymmetricAlgorithm
  /** The header carries a shared secret itself (GitLab, Okta, Postmark's basic auth): nothing is signed. */
  | 'token';

/** One piece of the signed content, concatenated in order. */
export type ContentPart =
  | { readonly literal: string }
  | { readonly part: 'body' | 'timestamp' | 'id' | 'method' | 'url' }
  /** A request header's value, as received (Twitch's message id and timestamp). */
  | { readonly header: string }
  /** Form parameters sorted by name, each name followed by its value (Twilio). */
  | { readonly part: 'form-params' };

/** `t=…,v1=…` and its relatives: the header is a list of entries, some of them signatures. */
export interface SignatureList {
  /** Between entries: `,` (Stripe), ` ` (Standard Webhooks), `;` (Paddle). */
  readonly separator: string;
  /** Between an entry's name and its value: `=`, or `,` for Standard Webhooks. */
  readonly assign: string;
  /** Entry names that carry a signature (`v1`, `h1`); others are ignored. */
  readonly versions: readonly string[];
  /** Entry name that carries the timestamp (`t`, `ts`), when the list has one. */
  readonly timestamp?: string;
}

export interface TimestampSpec {
  /** Where it is read: a header, the signature list's timestamp entry, or a JSON pointer into the verified body. */
  readonly from: { readonly header: string } | { readonly list: true } | { readonly pointer: string };
  readonly unit: TimestampUnit;
}

/** How a configured HMAC secret becomes key bytes. */
export type SecretFormat = 'utf8' | 'base64' | 'hex' | 'whsec';

export interface SchemeSpec {
  readonly algorithm: SchemeAlgorithm;
  /** Header(s) carrying signatures; each one present contributes (Box sends a primary and a secondary). */
  readonly headers: readonly string[];
  readonly encoding: SignatureEncoding | 'text';
  /** Hex in either case: only where the provider's own library accepts upper case (Discord's). */
  readonly anyCaseHex?: true;
  /** Text before the signature (`sha256=`, `v0=`, `Basic `), required when set. */
  readonly prefix?: string;
  readonly list?: SignatureList;
  readonly content: readonly ContentPart[];
  readonly secretFormat?: SecretFormat;
  readonly timestamp?: TimestampSpec;
  /** The header whose value `{id}` signs. */
  readonly idHeader?: string;
}

/** Where an identity field is read. */
export type FieldSource =
  | { readonly header: string }
  | { readonly pointer: string }
  | { readonly literal: string }
  /** `sha256:<hex>` of the raw body: an id for providers that send none, stable across retries of the same bytes. */
  | { readonly digest: true }
  /** The event type before its first `.` (Paddle's `subscription.updated` → `subscription`). */
  | { readonly typePrefix: string }
  /** The first of these that holds a value. */
  | { readonly first: readonly FieldSource[] }
  /** `present` when the body has something at `pointer`, else `otherwise` (Twitch: notification or revocation). */
  | { readonly ifPresent: string; readonly present: FieldSource; readonly otherwise: FieldSource }
  /** Each that holds a value, joined (`issues` + `.` + `opened`); nothing when the first holds nothing. */
  | { readonly join: readonly FieldSource[]; readonly separator: string };

export interface IdentitySpec {
  readonly eventId: FieldSource;
  readonly eventType: FieldSource;
  readonly eventTypeFallback?: string;
  readonly entityType?: FieldSource;
  readonly entityId?: FieldSource;
  readonly version?: FieldSource;
  /** Headers kept with the event (never one that could carry a signature or credential). */
  readonly keep?: readonly string[];
}
