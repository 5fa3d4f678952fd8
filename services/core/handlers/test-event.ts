import type { InboxEvent } from './types.ts';

/**
 * The event type reserved for test deliveries (`hookgate send-test`, the chart's `helm test`).
 * The apply engine settles such an event `ignored` without calling the handler (no statement,
 * no lock, no delivery; the rest of its batch applies as it would without it): it proves
 * the path from the provider's signature to a settled inbox row and never writes a business
 * table, whatever the endpoint's handler. `stats` counts these events apart.
 */
export const TEST_EVENT_TYPE = 'hookgate.test';

export function isTestEvent(event: Pick<InboxEvent, 'eventType'>): boolean {
  return event.eventType === TEST_EVENT_TYPE;
}
