import type { InboxEvent } from './types.ts';

/**
 * The event type reserved for test deliveries (`hookgate send-test`, the chart's `helm test`).
 * The apply engine settles such an event `ignored` without calling the handler (no statement,
 * no lock, no destination delivery; the rest of its batch applies as it would without it): it
 * proves the path from the provider's signature to a settled inbox row and never writes a
 * business table, whatever the endpoint's handler. `stats` counts these events apart.
 */
export const TEST_EVENT_TYPE = 'hookgate.test';

/**
 * The providers' own test and ping events, settled like hookgate's: a new GitHub webhook's first
 * delivery is `ping`, which no handler can apply (`project` would end it dead as unkeyed and
 * page someone on day one). Keyed by the inbox's provider name.
 */
const PROVIDER_TEST_EVENTS: Readonly<Record<string, readonly string[]>> = {
  github: ['ping'],
  bitbucket: ['diagnostics:ping'],
  pagerduty: ['pagey.ping'],
  intercom: ['ping'],
};

export function isTestEvent(event: Pick<InboxEvent, 'eventType'> & { readonly provider?: string }): boolean {
  if (event.eventType === TEST_EVENT_TYPE) return true;
  if (event.provider === undefined) return false;
  return PROVIDER_TEST_EVENTS[event.provider]?.includes(event.eventType) ?? false;
}
