import { describe, expect, it } from 'vitest';
import { uncoveredBefore } from '../../services/core/inbox/partitions.ts';

const d = (day: number) => new Date(Date.UTC(2026, 11, day));

describe('the stretches of time no inbox partition covers', () => {
  it('is everything before the cutoff when no partition is left', () => {
    expect(uncoveredBefore([], d(10))).toEqual([{ from: '-infinity', to: d(10) }]);
  });

  it('is only what lies before the first partition while the partitions cover the rest', () => {
    expect(
      uncoveredBefore(
        [
          { from_at: d(3), to_at: d(10) },
          { from_at: d(10), to_at: d(17) },
        ],
        d(12),
      ),
    ).toEqual([{ from: '-infinity', to: d(3) }]);
  });

  it('leaves a week kept in place out, and finds the dropped weeks on both sides of it', () => {
    expect(
      uncoveredBefore(
        [
          { from_at: d(8), to_at: d(15) },
          { from_at: d(22), to_at: d(29) },
        ],
        d(25),
      ),
    ).toEqual([
      { from: '-infinity', to: d(8) },
      { from: d(15).toISOString(), to: d(22) },
    ]);
  });

  it('ends at the cutoff', () => {
    expect(uncoveredBefore([{ from_at: d(1), to_at: d(8) }], d(12))).toEqual([
      { from: '-infinity', to: d(1) },
      { from: d(8).toISOString(), to: d(12) },
    ]);
  });
});
