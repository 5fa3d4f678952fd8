import type { Claim, ClaimHooks } from '../../services/core/inbox/claim.ts';

/**
 * A verified delivery as the claim takes it, with no entity, version or kept headers: what most
 * claim tests need. The body defaults to `{"id":"<eventId>"}`.
 */
export function plainClaim(
  endpoint: string,
  eventId: string,
  options: { provider?: string; eventType?: string; body?: string } = {},
): Claim {
  return {
    endpoint,
    provider: options.provider ?? 'standard-webhooks',
    event: {
      eventId,
      eventType: options.eventType ?? 'thing.updated',
      entityType: null,
      entityId: null,
      entityVersion: null,
      headers: {},
    },
    body: options.body ?? JSON.stringify({ id: eventId }),
    traceparent: null,
  };
}

/** Holds a gateway's claim transaction open (see claimGate). */
export interface ClaimGate {
  /** For startTestGateway: the claim carrying `eventId` waits before its COMMIT until release(). */
  readonly hooks: ClaimHooks;
  /** Resolves once that claim is open and waiting. */
  readonly holding: Promise<void>;
  readonly release: () => void;
}

/**
 * Keeps the claim of event `eventId` open (before its COMMIT) until `release()`: with
 * `claim.concurrency: 1` it holds the gateway's one commit slot, so later deliveries queue.
 */
export function claimGate(eventId: string): ClaimGate {
  let entered: () => void = () => {};
  const holding = new Promise<void>((resolve) => {
    entered = resolve;
  });
  let release: () => void = () => {};
  const released = new Promise<void>((resolve) => {
    release = resolve;
  });
  return {
    hooks: {
      beforeCommit: async (_client, accepted) => {
        if (!accepted.some((claim) => claim.event.eventId === eventId)) return;
        entered();
        await released;
      },
    },
    holding,
    release: () => release(),
  };
}
