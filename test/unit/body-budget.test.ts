import { describe, expect, it } from 'vitest';
import { parseConfig } from '../../services/core/config/load.ts';
import { BodyBudget } from '../../services/gateway/body-budget.ts';

describe('body budget', () => {
  it('takes what fits, refuses what does not, and gives back what is released', () => {
    const budget = new BodyBudget(100);
    expect(budget.reserve(60)).toBe(true);
    expect(budget.reserve(50)).toBe(false);
    expect(budget.held).toBe(60);
    expect(budget.reserve(40)).toBe(true);
    budget.release(60);
    expect(budget.reserve(50)).toBe(true);
    expect(budget.held).toBe(90);
  });

  it('lets one delivery in when nothing is held, whatever its size', () => {
    const budget = new BodyBudget(100);
    expect(budget.reserve(250)).toBe(true);
    expect(budget.reserve(1)).toBe(false);
    budget.release(250);
    expect(budget.held).toBe(0);
  });

  it('is configured no smaller than the body limit', () => {
    const config = (server: Record<string, unknown>) =>
      parseConfig({ server, endpoints: { a: { provider: 'stripe', secrets: ['whsec_x'] } } }, {});
    expect(config({ bodyLimit: '4mib', maxBufferedBytes: '8mib' }).server.maxBufferedBytes).toBe(
      8 * 1024 * 1024,
    );
    expect(() => config({ bodyLimit: '4mib', maxBufferedBytes: '2mib' })).toThrow(
      /server\.maxBufferedBytes.*bodyLimit/s,
    );
  });
});
