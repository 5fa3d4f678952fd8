import { describe, expect, it } from 'vitest';
import { parseConfig } from '../../services/core/config/load.ts';

// `endpoints.<name>.reconcile`: off unless set, defaults and bounds from the schema, and only
// where a listing API and the webhook to read are known.
const endpoint = (settings: Record<string, unknown>) =>
  parseConfig({ endpoints: { e: { secrets: ['whsec_x'], ...settings } } }, {}).endpoints.e!;

describe('reconcile settings', () => {
  it('are off unless set, and take their defaults when set empty', () => {
    expect(endpoint({ provider: 'stripe' }).reconcile).toBeUndefined();
    expect(endpoint({ provider: 'stripe', reconcile: {} }).reconcile).toEqual({
      every: 900_000,
      lookback: 7_200_000,
      since: 86_400_000,
      settle: 300_000,
      window: 3_600_000,
      budget: 500,
      staleAfter: 3_600_000,
    });
    expect(
      endpoint({
        provider: 'github',
        replay: { repository: 'acme/shop', hookId: 1 },
        reconcile: { every: '5m', lookback: '0s', budget: 50 },
      }).reconcile,
    ).toMatchObject({ every: 300_000, lookback: 0, budget: 50 });
  });

  it('refuse providers without a listing API, github without its webhook, and out-of-bound values', () => {
    expect(() => endpoint({ provider: 'shopify', reconcile: {} })).toThrow(
      'endpoints.e.reconcile: is available for stripe, github and paddle endpoints',
    );
    expect(() => endpoint({ provider: 'github', reconcile: {} })).toThrow(
      'endpoints.e.reconcile: needs replay: the webhook that delivers here',
    );
    expect(() => endpoint({ provider: 'stripe', reconcile: { every: '10s' } })).toThrow(
      'endpoints.e.reconcile.every: 10s is shorter than the 60s minimum',
    );
    expect(() => endpoint({ provider: 'stripe', reconcile: { budget: 0 } })).toThrow(
      'endpoints.e.reconcile.budget',
    );
    expect(() => endpoint({ provider: 'stripe', reconcile: { cadence: '1m' } })).toThrow('cadence');
  });
});

describe('the dedupe horizon', () => {
  const config = (document: Record<string, unknown>) =>
    parseConfig({ endpoints: { e: { secrets: ['whsec_x'], provider: 'stripe' } }, ...document }, {});

  it('is 35 days unless set, at least 3 days', () => {
    expect(config({}).dedupe).toEqual({ horizon: 35 * 86_400_000 });
    expect(config({ dedupe: { horizon: '60d' } }).dedupe.horizon).toBe(60 * 86_400_000);
    expect(() => config({ dedupe: { horizon: '2d' } })).toThrow(/dedupe\.horizon: .*3d/);
  });

  it("bounds reconciliation's since and lookback: a run never lists past it", () => {
    const reconciling = (reconcile: Record<string, unknown>, horizon = '35d') =>
      parseConfig(
        {
          dedupe: { horizon },
          endpoints: { e: { secrets: ['whsec_x'], provider: 'stripe', reconcile } },
        },
        {},
      );
    // The widest the reconcile section allows fits the default horizon.
    expect(reconciling({ since: '30d', lookback: '30d', every: '1d', settle: '1h' }).dedupe.horizon).toBe(
      35 * 86_400_000,
    );
    expect(() => reconciling({ since: '20d' }, '10d')).toThrow(
      'endpoints.e.reconcile.since: is 20d, past dedupe.horizon (10d)',
    );
    expect(() => reconciling({ lookback: '10d' }, '10d')).toThrow(
      'endpoints.e.reconcile.lookback: is 10d: with every and settle a run lists from up to 10d + 15m + 5m ago, not under dedupe.horizon (10d)',
    );
  });
});
