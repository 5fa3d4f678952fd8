import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { DELIVERY_OUTCOMES, STATUS_BY_CODE } from '../../services/gateway/rejections.ts';
import { ROOT } from '../support/process.ts';

// The outcome list operators read in docs/observability.md is the code's list, status by status.
describe('docs/observability.md', () => {
  const doc = readFileSync(join(ROOT, 'docs/observability.md'), 'utf8');
  const row = doc.split('\n').find((line) => line.startsWith('| `hookgate_deliveries_total` |')) ?? '';
  const list = row.slice(
    row.indexOf('`outcome` is one of:'),
    row.indexOf('Requests naming no configured endpoint'),
  );

  it('lists exactly the outcomes hookgate_deliveries_total can take', () => {
    expect(list.length).toBeGreaterThan(0);
    const documented = [...list.matchAll(/`([a-z_]+)`/g)]
      .map((m) => m[1])
      .filter((code) => code !== 'outcome');
    expect([...new Set(documented)].sort()).toEqual([...DELIVERY_OUTCOMES].sort());
  });

  it('files each refusal code under its HTTP status', () => {
    for (const [code, status] of Object.entries(STATUS_BY_CODE)) {
      const group = new RegExp(`${status}: [^;]*\`${code}\``);
      expect(list, `${code} under ${status}`).toMatch(group);
    }
  });
});
