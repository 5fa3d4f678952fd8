import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { isMap, isScalar, parseDocument, type YAMLMap } from 'yaml';
import { ROOT } from '../support/process.ts';

// The chart README's values table, generated from the `# --` comments of values.yaml. A key
// with a `# --` comment is one row (an object documented as a whole is not split further); a
// key without one must be a map whose keys are documented. Regenerate the table with
//   node test/chart/values-doc.ts --write
export const VALUES = join(ROOT, 'charts/hookgate/values.yaml');
export const README = join(ROOT, 'charts/hookgate/README.md');
const START = '<!-- values:start -->';
const END = '<!-- values:end -->';

export interface Row {
  readonly key: string;
  readonly type: string;
  readonly defaultValue: string;
  readonly description: string;
}

function description(comment: string | null | undefined): string | null {
  if (!comment) return null;
  const lines = comment.split('\n').map((line) => line.replace(/^ /, ''));
  const start = lines.findLastIndex((line) => line.startsWith('-- '));
  if (start < 0) return null;
  return lines
    .slice(start)
    .map((line, index) => (index === 0 ? line.slice(3) : line))
    .join(' ')
    .trim();
}

function typeOf(value: unknown): string {
  if (Array.isArray(value)) return 'list';
  if (value === null) return 'null';
  if (typeof value === 'object') return 'object';
  if (typeof value === 'number') return Number.isInteger(value) ? 'int' : 'float';
  return typeof value === 'boolean' ? 'bool' : 'string';
}

export function describeValues(text: string): { rows: Row[]; undocumented: string[] } {
  const document = parseDocument(text);
  const rows: Row[] = [];
  const undocumented: string[] = [];
  const walk = (map: YAMLMap, prefix: string) => {
    map.items.forEach((pair, index) => {
      const key = `${prefix}${isScalar(pair.key) ? String(pair.key.value) : String(pair.key)}`;
      const keyComment = isScalar(pair.key) ? pair.key.commentBefore : undefined;
      // yaml attaches the comment above a map's first key to the map itself.
      const inherited = index === 0 ? map.commentBefore : undefined;
      const text = description(keyComment) ?? description(inherited);
      const value = pair.value;
      if (text !== null) {
        const plain = isScalar(value) ? value.toJSON() : (value as { toJSON(): unknown } | null)?.toJSON();
        rows.push({ key, type: typeOf(plain), defaultValue: JSON.stringify(plain), description: text });
      } else if (isMap(value) && value.items.length > 0) {
        walk(value, `${key}.`);
      } else {
        undocumented.push(key);
      }
    });
  };
  walk(document.contents as YAMLMap, '');
  return { rows, undocumented };
}

export function renderTable(rows: readonly Row[]): string {
  const cell = (text: string) => text.replaceAll('|', '\\|');
  return [
    '| Key | Type | Default | Description |',
    '|-----|------|---------|-------------|',
    ...rows.map(
      (row) => `| \`${row.key}\` | ${row.type} | \`${cell(row.defaultValue)}\` | ${cell(row.description)} |`,
    ),
  ].join('\n');
}

export function tableInReadme(readme: string): string | null {
  const start = readme.indexOf(START);
  const end = readme.indexOf(END);
  if (start < 0 || end < start) return null;
  return readme.slice(start + START.length, end).trim();
}

if (process.argv[2] === '--write') {
  const { rows, undocumented } = describeValues(readFileSync(VALUES, 'utf8'));
  if (undocumented.length > 0) throw new Error(`undocumented values: ${undocumented.join(', ')}`);
  const readme = readFileSync(README, 'utf8');
  const start = readme.indexOf(START);
  const end = readme.indexOf(END);
  if (start < 0 || end < start) throw new Error(`${README} lacks the ${START} ... ${END} markers`);
  writeFileSync(
    README,
    `${readme.slice(0, start + START.length)}\n${renderTable(rows)}\n${readme.slice(end)}`,
  );
}
