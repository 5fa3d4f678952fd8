import { describe, expect, it } from 'vitest';
import { type EventDetail, timelineOf } from '../../../services/console/read-models/event.ts';

const at = (seconds: number) => new Date(Date.UTC(2026, 10, 30, 12, 0, seconds));

const requeued: EventDetail = {
  endpoint: 'stripe',
  event_id: 'evt_1',
  provider: 'stripe',
  event_type: 'invoice.paid',
  entity_type: null,
  entity_id: null,
  entity_version: null,
  status: 'pending',
  attempts: 6,
  requeued_attempts: 6,
  last_error: null,
  received_at: at(0),
  processed_at: null,
  received_via: null,
  traceparent: null,
  headers: {},
  payload: {},
  payload_bytes: 2,
};

describe("the console's event timeline", () => {
  it('tells a requeue at the time the audit trail has, never stamped with the received time', () => {
    const entries = timelineOf(requeued, [{ at: at(120), actor: 'alice', command: 'requeue' }]);
    expect(entries).toContainEqual({ at: at(120), what: 'requeued by alice after 6 attempt(s)' });
    // Without the audit row, no line claims a time it does not have.
    expect(timelineOf(requeued).some((entry) => entry.what.includes('requeue'))).toBe(false);
  });
});
