import type { Claim } from '../../services/core/inbox/claim.ts';

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
