import type { Claim, ClaimResult } from '../core/inbox/claim.ts';
import { identityProblem } from '../core/inbox/identity-checks.ts';
import { decodeVerifiedBody } from '../core/providers/parse-body.ts';
import type { HeaderBag } from '../core/providers/types.ts';
import {
  isQuarantineReason,
  keptHeaders,
  type QuarantineEntry,
  type StoreOutcome,
} from '../core/quarantine/store.ts';
import type { Endpoint } from './endpoints.ts';
import { handshakeAnswer, replyAnswer } from './handshake.ts';
import { type GatewayErrorCode, isGatewayErrorCode, STATUS_BY_CODE } from './rejections.ts';
import type { ReplayTokenLimiter } from './replay-limit.ts';
import { checkReplayToken, REPLAY_TOKEN_HEADER } from './replay-token.ts';

export interface Answer {
  readonly status: number;
  /** `accepted`, `duplicate`, `replied`, or the refusal code: the metrics label. */
  readonly outcome: string;
  readonly body: unknown;
  readonly eventId?: string;
  /** Why a 5xx happened, for the log line only: never sent to the provider. */
  readonly cause?: string;
  /** Seconds, sent as Retry-After. */
  readonly retryAfter?: number;
  /** Sent as text/plain instead of `body` (challenges echoed bare). */
  readonly text?: string;
  readonly headers?: Readonly<Record<string, string>>;
  /** Extra fields for the log line (a handshake's kind), never sent. */
  readonly note?: Readonly<Record<string, string>>;
}

export function refuse(code: GatewayErrorCode, message: string): Answer {
  return { status: STATUS_BY_CODE[code], outcome: code, body: { error: code, message } };
}

const RETRY_LATER: Partial<Record<GatewayErrorCode, string>> = {
  database_unavailable: 'The event could not be stored right now; it was not accepted. Retry later.',
  apply_failed: 'The event could not be applied right now; it was not accepted. Retry later.',
  overloaded: 'Too many deliveries are waiting to be stored; this one was not accepted. Retry later.',
};

const CLAIM_REFUSED: Partial<Record<GatewayErrorCode, string>> = {
  payload_unstorable:
    'PostgreSQL cannot store this JSON (for example a \\u0000 escape, or nesting deeper than jsonb allows); it will not be accepted on retry.',
};

const TRACEPARENT = /^[0-9a-f]{2}-[0-9a-f]{32}-[0-9a-f]{16}-[0-9a-f]{2}$/;

export interface ReceiveDeps {
  readonly claim: (claim: Claim) => Promise<ClaimResult>;
  readonly now: () => number;
  /** Counts wrong replay tokens per source; absent, guessing is only counted, not limited. */
  readonly replayLimiter?: ReplayTokenLimiter;
  /**
   * Keeps a verified delivery that cannot become an event (promise 8, docs/architecture.md);
   * resolves once the row has committed, with `full` when the endpoint's quarantine is at its cap
   * (nothing stored). Absent (unit harnesses), such a delivery is refused as before.
   */
  readonly quarantine?: (entry: QuarantineEntry) => Promise<StoreOutcome>;
}

/**
 * A verified delivery that cannot become an inbox event: stored in quarantine, then (and only
 * then: promise 1) acknowledged 200, so a provider that never retries loses nothing.
 */
async function quarantineOr(
  deps: ReceiveDeps,
  endpoint: Endpoint,
  rawBody: Buffer,
  headers: HeaderBag,
  refusal: { readonly code: string; readonly message: string },
  eventId?: string,
): Promise<Answer | null> {
  if (!deps.quarantine || !isQuarantineReason(refusal.code)) return null;
  let stored: StoreOutcome;
  try {
    stored = await deps.quarantine({
      endpoint: endpoint.name,
      reason: refusal.code,
      message: refusal.message,
      body: rawBody,
      headers: keptHeaders(headers, endpoint.provider.headerRules),
    });
  } catch (error) {
    return {
      ...refuse(
        'database_unavailable',
        'The delivery could not be stored right now; it was not accepted. Retry later.',
      ),
      cause: `quarantine failed (${refusal.code}): ${error instanceof Error ? error.message : String(error)}`,
      ...(eventId === undefined ? {} : { eventId }),
    };
  }
  if (stored === 'full') {
    // Acknowledging it would lose it (nothing keeps it): refused, retryable, so the provider
    // sends it again once an operator has released or dropped held rows.
    return {
      ...refuse(
        'quarantine_full',
        `The endpoint's quarantine holds its maximum of held deliveries; this verified delivery (${refusal.code}) was not accepted. Retry later.`,
      ),
      cause: `quarantine full (${refusal.code}): ${refusal.message}`,
      ...(eventId === undefined ? {} : { eventId }),
    };
  }
  return {
    status: 200,
    outcome: 'quarantined',
    body: { status: 'quarantined', reason: refusal.code },
    cause: `${refusal.code}: ${refusal.message}`,
    ...(eventId === undefined ? {} : { eventId }),
  };
}

/**
 * Verify, identify, claim: everything a delivery goes through between its last byte and its
 * answer. Nothing is parsed before the signature checks out, and nothing is answered 2xx
 * before the claim has committed.
 */
export async function receive(
  deps: ReceiveDeps,
  endpoint: Endpoint,
  rawBody: Buffer,
  headers: HeaderBag,
  /** Who sent it, as the replay-token limiter counts it (see sourceOf). */
  source = '',
): Promise<Answer> {
  // Unsigned handshakes (Asana's) carry no event and are answered without verification.
  const handshake = handshakeAnswer(endpoint, 'POST', headers, '');
  if (handshake) return handshake;
  // An operator's re-post with the endpoint's replay token stands in for the provider's
  // signature; without replaySecrets configured the header means nothing.
  const replaySecrets = endpoint.config.replaySecrets;
  const token = replaySecrets ? headers[REPLAY_TOKEN_HEADER] : undefined;
  if (token !== undefined && replaySecrets) {
    // A source over its limit is refused before the comparison: guessing costs it the window.
    const limiter = deps.replayLimiter;
    const retryAfter = limiter?.retryAfter(source, endpoint.name, deps.now()) ?? 0;
    if (retryAfter > 0) {
      return {
        ...refuse(
          'replay_token_rate_limited',
          `Too many wrong ${REPLAY_TOKEN_HEADER} headers from this source; retry after ${retryAfter} s.`,
        ),
        retryAfter,
      };
    }
    if (!checkReplayToken(token, replaySecrets)) {
      limiter?.recordFailure(source, endpoint.name, deps.now());
      return refuse(
        'replay_token_invalid',
        `The ${REPLAY_TOKEN_HEADER} header does not match this endpoint's replay secret.`,
      );
    }
  } else {
    const verdict = endpoint.provider.verify({
      rawBody,
      headers,
      secrets: endpoint.config.secrets,
      nowMs: deps.now(),
      toleranceSeconds: endpoint.config.tolerance / 1000,
    });
    if (!verdict.ok) return refuse(verdict.code, verdict.message);
  }

  const decoded = decodeVerifiedBody(endpoint.provider, rawBody);
  if (!decoded) return refuse('body_not_json', 'The signature is valid but the body is not UTF-8 JSON.');
  const { text, body } = decoded;

  const identity = endpoint.provider.identify({ headers, body, rawBody, secrets: endpoint.config.secrets });
  if (!identity.ok)
    return (
      (await quarantineOr(deps, endpoint, rawBody, headers, identity)) ??
      refuse(identity.code, identity.message)
    );
  if ('reply' in identity) return replyAnswer(identity.reply);
  const problem = identityProblem(identity.event);
  if (problem)
    return (
      (await quarantineOr(deps, endpoint, rawBody, headers, problem)) ?? refuse(problem.code, problem.message)
    );

  const traceparent = headers.traceparent;
  const result = await deps.claim({
    endpoint: endpoint.name,
    provider: endpoint.provider.name,
    event: identity.event,
    body: text,
    traceparent: traceparent && TRACEPARENT.test(traceparent) ? traceparent : null,
    receivedVia: token !== undefined ? 'replay_token' : null,
    dedupe: endpoint.config.dedupe,
    payloadSearch: endpoint.config.payloadSearch,
    raw: endpoint.rawKept ? { body: rawBody, headers: keptRawHeaders(headers, endpoint.rawKept) } : null,
  });
  if (!result.ok) {
    const code = isGatewayErrorCode(result.error.code) ? result.error.code : 'database_unavailable';
    const kept = await quarantineOr(
      deps,
      endpoint,
      rawBody,
      headers,
      { code, message: CLAIM_REFUSED[code] ?? result.error.message },
      identity.event.eventId,
    );
    if (kept) return kept;
    const answer = refuse(code, CLAIM_REFUSED[code] ?? result.error.message);
    // PostgreSQL's own words stay in the log: they describe the database, not the delivery.
    if (answer.status < 500)
      return {
        ...answer,
        eventId: identity.event.eventId,
        cause: `${result.error.code}: ${result.error.message}`,
      };
    // The provider learns only that it should retry; the reason goes to the log.
    const cause = result.error.cause instanceof Error ? `: ${result.error.cause.message}` : '';
    return {
      ...refuse(code, RETRY_LATER[code] ?? 'The event was not accepted; retry later.'),
      eventId: identity.event.eventId,
      cause: `${result.error.code}: ${result.error.message}${cause}`,
    };
  }
  return {
    status: 200,
    outcome: result.outcome,
    body: endpoint.provider.emptyAcknowledgement
      ? undefined
      : { status: result.outcome, endpoint: endpoint.name, event_id: identity.event.eventId },
    eventId: identity.event.eventId,
  };
}

/** The pass-through headers a `body: raw` destination sends on, those present, as received. */
function keptRawHeaders(headers: HeaderBag, names: readonly string[]): Record<string, string> {
  const kept: Record<string, string> = {};
  for (const name of names) {
    const value = headers[name];
    if (value !== undefined) kept[name] = value;
  }
  return kept;
}
