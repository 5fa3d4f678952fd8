import { describe, expect, it } from 'vitest';
import { createApplyMetrics } from '../../services/core/apply/metrics.ts';
import { createRegistry, OTHER_LABEL_VALUE } from '../../services/core/metrics.ts';

describe('event_type label bound', () => {
  it('300 invented event types add at most 100 series per endpoint; long ones become (other)', async () => {
    const registry = createRegistry();
    const metrics = createApplyMetrics(registry);
    for (let i = 0; i < 300; i += 1) {
      metrics.eventsApplied.inc({ endpoint: 'shop', event_type: `forged/${i}`, outcome: 'applied' });
    }
    metrics.eventsApplied.inc({ endpoint: 'other', event_type: 'forged/1', outcome: 'applied' });
    metrics.eventsApplied.inc({ endpoint: 'other', event_type: 'x'.repeat(10_000), outcome: 'applied' });
    const values = (await registry.getSingleMetric('hookgate_events_applied_total')?.get())?.values ?? [];
    const shop = values.filter((v) => v.labels.endpoint === 'shop');
    expect(shop).toHaveLength(101);
    expect(shop.find((v) => v.labels.event_type === OTHER_LABEL_VALUE)?.value).toBe(200);
    // Known values keep counting under their own name.
    metrics.eventsApplied.inc({ endpoint: 'shop', event_type: 'forged/0', outcome: 'applied' });
    const again = (await registry.getSingleMetric('hookgate_events_applied_total')?.get())?.values ?? [];
    expect(again.find((v) => v.labels.endpoint === 'shop' && v.labels.event_type === 'forged/0')?.value).toBe(
      2,
    );
    // Another endpoint has its own budget; a huge value never becomes a label.
    expect(
      again
        .filter((v) => v.labels.endpoint === 'other')
        .map((v) => v.labels.event_type)
        .sort(),
    ).toEqual([OTHER_LABEL_VALUE, 'forged/1']);
  });
});
