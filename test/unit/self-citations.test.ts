// The project speaks of itself: its promises are docs/architecture.md's numbered list ("promise
// 8"), and its reasons live in its own docs. No file cites a document the repository does not
// have (the design document the project started from) or a tracker's issue number.
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';

const ROOTS = ['services', 'docs', 'charts', 'test', 'load', 'bench', 'migrations', 'release'];
const FILES = ['README.md', 'SECURITY.md', 'CHANGELOG.md', 'Makefile', 'Dockerfile'];
const TEXT = /\.(ts|md|sql|yaml|yml|json|tpl|txt)$|^[A-Za-z]+$/;
// Spelt in pieces so that this file does not cite what it forbids.
const CITATION = new RegExp(`${'DESIGN'}(\\.md|\\s+promise)|\\b[Ii]${'ssue'} [0-9]+`);

function files(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    if (name === 'node_modules' || name === 'crds') return [];
    if (statSync(path).isDirectory()) return files(path);
    return TEXT.test(name) ? [path] : [];
  });
}

describe('citations', () => {
  it('the pattern finds what it forbids', () => {
    expect(CITATION.test(`kept (${'DESIGN'}.md promise 8)`)).toBe(true);
    expect(CITATION.test(`the commands of ${'issue'} 23`)).toBe(true);
    expect(CITATION.test('kept (promise 8, docs/architecture.md)')).toBe(false);
  });

  it('code and docs cite the promises and docs of this repository, not an outside document or issue numbers', () => {
    const all = [...ROOTS.flatMap(files), ...FILES];
    expect(all.length).toBeGreaterThan(500);
    const found = all.flatMap((path) =>
      readFileSync(path, 'utf8')
        .split('\n')
        .flatMap((line, i) => (CITATION.test(line) ? [`${path}:${i + 1}: ${line.trim()}`] : [])),
    );
    expect(found).toEqual([]);
  });
});
