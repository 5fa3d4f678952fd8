import { describe, expect, it } from 'vitest';
import { choosePath, payloadIndexed } from '../../../services/console/read-models/events.ts';

// Which index answers a payload containment search: the payload index only when every endpoint
// the search covers has `payloadSearch` (only their rows are in it), else the time path, which
// matches payloads among the rows it reads and so misses none.
const ENDPOINTS = ['github', 'rare', 'stripe'];
const contains = { data: { customer: 'cus_1' } };

describe('the payload search path', () => {
  it('reads the index for an endpoint that has payloadSearch, or for all endpoints when all have it', () => {
    expect(payloadIndexed({ contains, endpoint: 'stripe' }, ENDPOINTS, ['stripe'])).toBe(true);
    expect(payloadIndexed({ contains }, ENDPOINTS, ENDPOINTS)).toBe(true);
    expect(choosePath({ contains }, payloadIndexed({ contains }, ENDPOINTS, ENDPOINTS))).toBe('containment');
  });

  it('reads by time (or by a status index) when one endpoint it covers lacks it', () => {
    expect(payloadIndexed({ contains, endpoint: 'rare' }, ENDPOINTS, ['stripe', 'github'])).toBe(false);
    expect(payloadIndexed({ contains }, ENDPOINTS, ['stripe', 'github'])).toBe(false);
    expect(payloadIndexed({ contains }, [], [])).toBe(false);
    expect(choosePath({ contains }, false)).toBe('time');
    expect(choosePath({ contains, status: 'dead' }, false)).toBe('dead');
  });

  it('leaves the more selective searches as they were', () => {
    expect(choosePath({ contains, eventId: 'evt_1' }, false)).toBe('event-id');
    expect(choosePath({ contains, entityId: 'in_1' }, true)).toBe('entity');
  });
});
