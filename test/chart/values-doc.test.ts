import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { describeValues, README, renderTable, tableInReadme, VALUES } from './values-doc.ts';

describe('chart values documentation', () => {
  const { rows, undocumented } = describeValues(readFileSync(VALUES, 'utf8'));

  it('every value in values.yaml has a "# --" comment', () => {
    expect(rows.length).toBeGreaterThan(60);
    expect(undocumented).toEqual([]);
  });

  it('the README values table matches values.yaml (regenerate: node test/chart/values-doc.ts --write)', () => {
    const table = tableInReadme(readFileSync(README, 'utf8'));
    expect(table).not.toBeNull();
    expect(table).toBe(renderTable(rows));
  });

  it('a key left without a comment is reported (the check can fail)', () => {
    const result = describeValues('image:\n  # -- documented\n  tag: ""\n  pullPolicy: Always\n');
    expect(result.undocumented).toEqual(['image.pullPolicy']);
  });
});
