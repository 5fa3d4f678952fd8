/** Request headers with lower-cased names; repeated headers arrive joined by ", ". */
export type HeaderBag = Readonly<Record<string, string | undefined>>;

export interface VerifyRequest {
  /** The exact bytes received; nothing is parsed before the signature checks out. */
  readonly rawBody: Buffer;
  readonly headers: HeaderBag;
  /** All currently valid secrets of the endpoint, newest first; any one may match. */
  readonly secrets: readonly string[];
  /** The verifier's clock in epoch milliseconds; tests pin it. */
  readonly nowMs: number;
  /** Timestamps further than this from `nowMs`, in either direction, are refused. */
  readonly toleranceSeconds: number;
}

/** Why a delivery is refused. Each maps to one 4xx status in the gateway. */
export type RejectionCode =
  | 'signature_missing'
  | 'signature_invalid'
  | 'timestamp_missing'
  | 'timestamp_invalid'
  | 'timestamp_out_of_tolerance'
  | 'event_id_missing'
  | 'event_type_missing'
  | 'version_invalid'
  | 'body_not_json';

export interface Rejection {
  readonly ok: false;
  readonly code: RejectionCode;
  readonly message: string;
}

export type Verdict = { readonly ok: true } | Rejection;

/** What the gateway needs to claim a verified delivery. */
export interface EventIdentity {
  readonly eventId: string;
  readonly eventType: string;
  readonly entityType: string | null;
  readonly entityId: string | null;
  /** Normalised to a decimal integer string (see version.ts) so PostgreSQL can order it. */
  readonly entityVersion: string | null;
  /** Non-secret headers worth keeping with the event (event topic, retry count, ...). */
  readonly headers: Readonly<Record<string, string>>;
  /**
   * The event id came from a header the signature does not cover (GitHub, Shopify, hmac's
   * eventIdHeader): a captured body re-sent under a new id would verify as a new event, so the
   * gateway also deduplicates on a digest of the signed body.
   */
  readonly idUnsigned?: boolean;
}

/**
 * Some providers ask a question instead of delivering an event (Slack's URL verification).
 * The answer is sent as is and nothing is stored.
 */
export interface DirectReply {
  readonly ok: true;
  readonly reply: { readonly status: number; readonly body: unknown };
}

export type Identification = { readonly ok: true; readonly event: EventIdentity } | DirectReply | Rejection;

export interface VerifiedDelivery {
  readonly headers: HeaderBag;
  /** The body parsed as JSON, only after verification succeeded. */
  readonly body: unknown;
}

/** JSON pointers (RFC 6901) an endpoint may set to override a provider's defaults. */
export interface ExtractOverrides {
  readonly eventId?: string | undefined;
  readonly eventType?: string | undefined;
  readonly entityType?: string | undefined;
  readonly entityId?: string | undefined;
  readonly version?: string | undefined;
}

export interface Provider {
  readonly name: string;
  verify(request: VerifyRequest): Verdict;
  identify(delivery: VerifiedDelivery): Identification;
}
