import type { HeaderRules } from './headers.ts';

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
  /** The provider's delivery headers present (eventHeaders): never a signature or token. */
  readonly headers: Readonly<Record<string, string>>;
  /**
   * The event id came from a header the signature does not cover (GitHub, Shopify, hmac's
   * eventIdHeader): a captured body re-sent under a new id would verify as a new event, so the
   * gateway also deduplicates on a digest of the signed body.
   */
  readonly idUnsigned?: boolean;
}

/** An answer sent as is, for a question that is not an event. */
export interface ReplyContent {
  readonly status: number;
  /** Sent as JSON, unless `text` is set; nothing is sent with a 204. */
  readonly body?: unknown;
  /** Sent as text/plain (Twitch's and Dropbox's challenges are echoed bare). */
  readonly text?: string;
  readonly headers?: Readonly<Record<string, string>>;
  /** What was answered, for the log line: `url_verification`, `ping`, ... */
  readonly kind?: string;
  /** Extra fields for the answer's log line (never sent). */
  readonly log?: Readonly<Record<string, string>>;
}

/**
 * Some providers ask a question instead of delivering an event (Slack's URL verification,
 * Zoom's URL validation, Discord's PING, Twitch's callback verification, Xero's intent to
 * receive). The question is signed like an event; the answer is sent as is and nothing is stored.
 */
export interface DirectReply {
  readonly ok: true;
  readonly reply: ReplyContent;
}

export type Identification = { readonly ok: true; readonly event: EventIdentity } | DirectReply | Rejection;

export interface VerifiedDelivery {
  readonly headers: HeaderBag;
  /** The body parsed as JSON, only after verification succeeded. */
  readonly body: unknown;
  /** The verified bytes, for ids taken from their digest. */
  readonly rawBody?: Buffer;
  /** The endpoint's secrets, for answers that must be signed with the one that verified (Zoom). */
  readonly secrets?: readonly string[];
}

/**
 * A request some providers send before (or beside) signed deliveries, that carries no
 * signature: Asana's `X-Hook-Secret` handshake, Dropbox's and Okta's GET challenges. Answering
 * it stores nothing and reveals nothing but what the request itself carried.
 */
export interface HandshakeRequest {
  readonly method: string;
  readonly headers: HeaderBag;
  /** The request's query string, without `?`. */
  readonly query: string;
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
  /**
   * Which headers the provider reads, keeps for reading, and must never keep (its signature or
   * token): the only headers an inbox event or a quarantined delivery stores (headers.ts).
   */
  readonly headerRules: HeaderRules;
  verify(request: VerifyRequest): Verdict;
  identify(delivery: VerifiedDelivery): Identification;
  /** The answer to an unsigned handshake, or null when the request is not one (then it is verified as usual). */
  handshake?(request: HandshakeRequest): ReplyContent | null;
  /** HTTP methods besides POST that `handshake` answers (Dropbox and Okta challenge with GET). */
  readonly handshakeMethods?: readonly string[];
  /**
   * The provider wants its deliveries acknowledged with no body at all (Xero: "there is no body
   * in the response", or it retries and then disables the webhook). Refusals keep theirs.
   */
  readonly emptyAcknowledgement?: boolean;
  /**
   * Bodies that are not JSON (Twilio posts forms): the verified text as the JSON document to
   * store and identify, or null when it cannot be one.
   */
  decodeBody?(text: string): unknown;
}
