import { describe, expect, it } from 'vitest';
import { DEFAULT_MIX, eventAt, mixSettings, planStep, type Run } from '../../../load/lib/mix.ts';

const run: Run = { id: 'mixtest', startedAt: 1_764_460_800 };
const N = 4000;

describe('load mix', () => {
  it('is a pure function of (run, index): the same plan twice, another run differs', () => {
    const a = Array.from({ length: 200 }, (_, i) => planStep('stripe', run, i, DEFAULT_MIX));
    const b = Array.from({ length: 200 }, (_, i) => planStep('stripe', run, i, DEFAULT_MIX));
    expect(a).toEqual(b);
    const other = planStep('stripe', { ...run, id: 'other' }, 5, DEFAULT_MIX);
    expect(other.event.id).not.toBe(a[5]!.event.id);
  });

  it('sends about the configured shares of later and concurrent duplicates, each a true re-send', () => {
    const steps = Array.from({ length: N }, (_, i) => planStep('standard-webhooks', run, i, DEFAULT_MIX));
    const later = steps.filter((s) => s.kind === 'later-duplicate');
    const concurrent = steps.filter((s) => s.kind === 'concurrent-duplicate');
    expect(later.length / N).toBeGreaterThan(0.07);
    expect(later.length / N).toBeLessThan(0.13);
    expect(concurrent.length / N).toBeGreaterThan(0.03);
    expect(concurrent.length / N).toBeLessThan(0.07);
    expect(concurrent.every((s) => s.copies === 2)).toBe(true);
    // A later duplicate re-sends, byte for byte, an event an earlier arrival sent as its own.
    for (const [index, step] of steps.entries()) {
      if (step.kind !== 'later-duplicate') continue;
      expect(step.original).toBeLessThan(index);
      expect(index - step.original).toBeLessThanOrEqual(DEFAULT_MIX.maxLag + 50);
      const original = steps[step.original]!;
      expect(original.kind).not.toBe('later-duplicate');
      expect(original.event).toEqual(step.event);
    }
  });

  it('delivers each entity its versions 1..V in shuffled order, often out of order', () => {
    const perEntity = new Map<string, number[]>();
    for (let i = 0; i < N; i += 1) {
      const event = eventAt('standard-webhooks', run, i, DEFAULT_MIX);
      perEntity.set(event.entity!, [...(perEntity.get(event.entity!) ?? []), event.version!]);
      expect(JSON.parse(event.body).data).toMatchObject({ id: event.entity, version: event.version });
    }
    let outOfOrder = 0;
    for (const versions of perEntity.values()) {
      expect([...versions].sort()).toEqual([1, 2, 3, 4]);
      if (versions.join() !== '1,2,3,4') outOfOrder += 1;
    }
    expect(outOfOrder / perEntity.size).toBeGreaterThan(0.8);
  });

  it('billing: per group one invoice paid and one voided, never both; paid sometimes before created', () => {
    const byInvoice = new Map<string, string[]>();
    for (let i = 0; i < N; i += 1) {
      const event = eventAt('stripe', run, i, DEFAULT_MIX);
      const body = JSON.parse(event.body);
      expect(body.id).toBe(event.id);
      expect(body.type).toBe(event.type);
      const invoice = body.data.object.id as string;
      byInvoice.set(invoice, [...(byInvoice.get(invoice) ?? []), event.type]);
      if (event.type === 'invoice.paid') expect(event.invoice).toBe(invoice);
      else expect(event.invoice).toBeNull();
    }
    let paidFirst = 0;
    for (const types of byInvoice.values()) {
      expect(types).toHaveLength(2);
      expect(types.includes('invoice.paid') && types.includes('invoice.voided')).toBe(false);
      if (types[0] === 'invoice.paid') paidFirst += 1;
    }
    expect(paidFirst).toBeGreaterThan(N / 4 / 10);
  });

  it('refuses shares that leave no unique arrivals', () => {
    expect(() => mixSettings({ laterDuplicates: 0.6, concurrentDuplicates: 0.5 })).toThrow();
    expect(() => mixSettings({ laterDuplicates: -0.1 })).toThrow();
    expect(mixSettings({ laterDuplicates: 0.2 }).laterDuplicates).toBe(0.2);
  });

  it('spread ids: the same plan, unique ids, no longer in one range after the run id', () => {
    const spreadMix = mixSettings({ spreadIds: true });
    for (const provider of ['stripe', 'standard-webhooks', 'github'] as const) {
      const plain = Array.from({ length: 2000 }, (_, i) => eventAt(provider, run, i, DEFAULT_MIX));
      const spread = Array.from({ length: 2000 }, (_, i) => eventAt(provider, run, i, spreadMix));
      expect(plain.every((e) => e.id.replace(/^[a-z]+_/, '').startsWith(run.id))).toBe(true);
      // Rebuilt identically (duplicates must be byte for byte), and as many distinct ids.
      expect(spread).toEqual(Array.from({ length: 2000 }, (_, i) => eventAt(provider, run, i, spreadMix)));
      expect(new Set(spread.map((e) => e.id)).size).toBe(2000);
      const leading = new Set(spread.map((e) => e.id.replace(/^[a-z]+_/, '').slice(0, 2)));
      expect(leading.size).toBeGreaterThan(200);
      expect(spread.every((e) => e.id.includes(run.id))).toBe(true);
    }
    // Billing keeps its pairing: every payment names an invoice the same group created.
    const steps = Array.from({ length: 400 }, (_, i) => eventAt('stripe', run, i, spreadMix));
    const paid = steps.filter((e) => e.invoice !== null).map((e) => e.invoice!);
    expect(new Set(paid).size).toBe(100);
    expect(paid.every((invoice) => /^in_[0-9a-f]{8}_/.test(invoice))).toBe(true);
  });
});
