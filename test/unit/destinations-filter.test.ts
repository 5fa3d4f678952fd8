import { describe, expect, it } from 'vitest';
import { compileFilter, globToRegExp } from '../../services/core/destinations/filter.ts';

const invoice = { id: 'in_1', data: { object: { currency: 'eur', amount: 1200, live: true, note: null } } };

describe('destination filters', () => {
  it('match every event when there is no filter', () => {
    expect(compileFilter(undefined)({ eventType: 'anything', payload: {} })).toEqual({ matches: true });
  });

  it('match event types exactly and by glob', () => {
    const filter = compileFilter({ types: ['invoice.*', 'customer.created'] });
    expect(filter({ eventType: 'invoice.paid', payload: {} }).matches).toBe(true);
    expect(filter({ eventType: 'invoice.payment.failed', payload: {} }).matches).toBe(true);
    expect(filter({ eventType: 'customer.created', payload: {} }).matches).toBe(true);
    expect(filter({ eventType: 'customer.created.extra', payload: {} }).matches).toBe(false);
    expect(filter({ eventType: 'invoice', payload: {} }).matches).toBe(false);
    expect(filter({ eventType: 'xinvoice.paid', payload: {} })).toEqual({
      matches: false,
      reason: 'type xinvoice.paid matches none of invoice.*, customer.created',
    });
  });

  it('treat everything but * in a glob literally', () => {
    expect(globToRegExp('a.b').test('aXb')).toBe(false);
    expect(globToRegExp('a+(b)').test('a+(b)')).toBe(true);
    expect(globToRegExp('*').test('')).toBe(true);
  });

  it('check equals by type and value', () => {
    const eur = compileFilter({ where: [{ pointer: '/data/object/currency', equals: 'eur' }] });
    expect(eur({ eventType: 't', payload: invoice }).matches).toBe(true);
    expect(eur({ eventType: 't', payload: { data: { object: { currency: 'usd' } } } })).toEqual({
      matches: false,
      reason: 'not: /data/object/currency equals "eur"',
    });
    const amount = compileFilter({ where: [{ pointer: '/data/object/amount', equals: '1200' }] });
    expect(amount({ eventType: 't', payload: invoice }).matches).toBe(false);
    const nul = compileFilter({ where: [{ pointer: '/data/object/note', equals: null }] });
    expect(nul({ eventType: 't', payload: invoice }).matches).toBe(true);
    expect(nul({ eventType: 't', payload: {} }).matches).toBe(false);
  });

  it('check in and exists, and need every condition', () => {
    const filter = compileFilter({
      types: ['invoice.*'],
      where: [
        { pointer: '/data/object/currency', in: ['eur', 'gbp'] },
        { pointer: '/data/object/live', exists: true },
        { pointer: '/data/object/deleted', exists: false },
      ],
    });
    expect(filter({ eventType: 'invoice.paid', payload: invoice }).matches).toBe(true);
    expect(
      filter({ eventType: 'invoice.paid', payload: { data: { object: { currency: 'gbp', live: false } } } })
        .matches,
    ).toBe(true);
    expect(
      filter({ eventType: 'invoice.paid', payload: { data: { object: { currency: 'usd', live: true } } } }),
    ).toEqual({ matches: false, reason: 'not: /data/object/currency in ["eur","gbp"]' });
    expect(
      filter({
        eventType: 'invoice.paid',
        payload: { data: { object: { currency: 'eur', deleted: true, live: 1 } } },
      }),
    ).toEqual({ matches: false, reason: 'not: /data/object/deleted is absent' });
    expect(filter({ eventType: 'invoice.paid', payload: 'not an object' }).matches).toBe(false);
  });
});
