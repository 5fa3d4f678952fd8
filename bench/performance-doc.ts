// `make performance-doc`: docs/performance.md's figures from the capacity scenario's latest results.
// Copies bench/results/capacity.json (PostgreSQL 18) and capacity-pg15.json (15), whichever exist,
// into docs/performance.json (committed: bench/results/ is not) and writes the page's generated
// part from them. test/unit/performance-doc.test.ts checks that the page says what that file holds.
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { capacitySummarySchema, withCapacityPage } from './capacity-table.ts';
import { ROOT } from './processes.ts';

const results = ['capacity.json', 'capacity-pg15.json']
  .map((name) => join(ROOT, 'bench', 'results', name))
  .filter((path) => existsSync(path));
if (results.length === 0) {
  process.stderr.write('no bench/results/capacity*.json: run `BENCH_SCENARIOS=capacity make bench` first\n');
  process.exit(1);
}
const reports = results.map((path) => JSON.parse(readFileSync(path, 'utf8')) as unknown);
const summaries = reports.map((report) => capacitySummarySchema.parse(report));
const page = join(ROOT, 'docs', 'performance.md');
writeFileSync(join(ROOT, 'docs', 'performance.json'), `${JSON.stringify(reports, null, 2)}\n`);
writeFileSync(page, withCapacityPage(readFileSync(page, 'utf8'), summaries));
process.stdout.write(`docs/performance.md and docs/performance.json written from ${results.join(', ')}\n`);
