import { describe, expect, it } from 'vitest';
import { arithmeticText, committedArithmetic } from './chart-arithmetic.ts';

describe('the numbers the chart computes with', () => {
  it('are the TypeScript’s (regenerate: node test/chart/chart-arithmetic.ts --write)', () => {
    expect(committedArithmetic()).toBe(arithmeticText());
  });
});
