import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import {
  BEGIN,
  type CapacitySummary,
  capacitySummarySchema,
  END,
  ROWS,
  renderCapacityPage,
} from '../../bench/capacity-table.ts';

// docs/performance.md's tables are generated (bench/performance-doc.ts) from the capacity
// scenario's results, committed as docs/performance.json. A figure edited by hand, a result file
// replaced without regenerating the page, a row the scenario gained or lost: each fails here.
const page = readFileSync(new URL('../../docs/performance.md', import.meta.url), 'utf8');
const committed = (): CapacitySummary[] =>
  (
    JSON.parse(readFileSync(new URL('../../docs/performance.json', import.meta.url), 'utf8')) as unknown[]
  ).map((report) => capacitySummarySchema.parse(report));

/** The cells of a Markdown table's rows, header first, the separator left out. */
function tableAfter(text: string, heading: string): string[][] {
  const lines = text.slice(text.indexOf(heading)).split('\n');
  const start = lines.findIndex((line) => line.startsWith('|'));
  const rows: string[][] = [];
  for (const line of lines.slice(start)) {
    if (!line.startsWith('|')) break;
    rows.push(line.slice(2, -2).split(' | '));
  }
  return rows.filter((_, i) => i !== 1);
}

/** What is wrong between the page and the results; empty when the page says what they hold. */
function problems(text: string, reports: readonly CapacitySummary[]): string[] {
  const found: string[] = [];
  const generated = text.slice(text.indexOf(BEGIN), text.indexOf(END) + END.length);
  if (generated !== renderCapacityPage(reports))
    found.push('the generated part differs from what the results render');
  const keys = ROWS.map((row) => row.key).sort();
  for (const report of reports) {
    const measured = Object.keys(report.figures).sort();
    if (JSON.stringify(measured) !== JSON.stringify(keys))
      found.push(`PostgreSQL ${report.major}'s results do not have exactly the table's rows`);
  }
  const [header = [], ...rows] = tableAfter(generated, '### The figures');
  if (
    JSON.stringify(header) !==
    JSON.stringify([
      'Figure',
      ...reports.map((r) => `PostgreSQL ${r.major}`),
      'Phase of the scenario, and its knob',
    ])
  )
    found.push(`the figures table's columns are ${header.join(', ')}`);
  if (JSON.stringify(rows.map((row) => row[0])) !== JSON.stringify(ROWS.map((row) => row.label)))
    found.push("the figures table's rows are not the scenario's");
  return found;
}

describe('docs/performance.md says what docs/performance.json holds', () => {
  it('both majors were measured, and the page renders exactly their results', () => {
    const reports = committed();
    expect(reports.map((r) => r.major)).toEqual([18, 15]);
    expect(problems(page, reports)).toEqual([]);
  });

  it('every figure the page prints is in its row, from the result file', () => {
    const reports = committed();
    const [, ...rows] = tableAfter(page, '### The figures');
    const gateway = rows.find((row) => row[0] === ROWS[0]!.label)!;
    const value = reports[0]!.figures[ROWS[0]!.key]!;
    expect(gateway[1]).toBe(value.toLocaleString('en-US', { maximumFractionDigits: 0 }));
  });

  it('a changed figure, a missing row or a missing major fails', () => {
    const reports = committed();
    const [first, ...others] = reports;
    const changed = { ...first!, figures: { ...first!.figures, 'gateway.perCore': 1 } };
    expect(problems(page, [changed, ...others])).toContain(
      'the generated part differs from what the results render',
    );
    const { 'apply.perCore': _dropped, ...fewer } = first!.figures;
    expect(problems(page, [{ ...first!, figures: fewer }, ...others])).toContain(
      "PostgreSQL 18's results do not have exactly the table's rows",
    );
    expect(problems(page, [first!])).not.toEqual([]);
    const edited = page.replace(ROWS[3]!.label, 'Applied events/s per worker core, hand-edited');
    expect(problems(edited, reports)).toContain("the figures table's rows are not the scenario's");
  });

  it('the page says the machine was shared and how many cores it had', () => {
    for (const report of committed()) expect(page).toContain(`shared ${report.machine.cores}-core machine`);
  });
});
