import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { PROVIDER_NAMES } from '../../services/core/providers/index.ts';
import { ROOT } from '../support/process.ts';

// "Nothing is lost: providers retry" was false for GitHub, which never retries. The runbook
// says, for every provider hookgate verifies, what it does with a refused delivery and what the
// operator must do; a provider added without that row fails here.
const runbooks = readFileSync(join(ROOT, 'docs/runbooks.md'), 'utf8');

function section(title: string): string {
  const start = runbooks.indexOf(`## ${title}\n`);
  if (start < 0) return '';
  const end = runbooks.indexOf('\n## ', start + 1);
  return runbooks.slice(start, end < 0 ? undefined : end);
}

describe('docs/runbooks.md: what each provider does with a refused delivery', () => {
  const table = section('What each provider does with a refused delivery');
  const rows = table
    .split('\n')
    .filter((line) => line.startsWith('| ') && !line.startsWith('| provider') && !line.startsWith('|---'))
    .map((line) => line.split('|').map((cell) => cell.trim()));

  it('has a row for every provider, each saying how long it retries and what to do', () => {
    const documented = new Set(
      rows.flatMap((cells) => [...cells[1]!.matchAll(/`([a-z-]+)`/g)].map((m) => m[1])),
    );
    expect([...PROVIDER_NAMES].filter((name) => !documented.has(name))).toEqual([]);
    for (const cells of rows) {
      expect(cells).toHaveLength(6);
      expect(cells.slice(2, 5).every((cell) => cell !== '')).toBe(true);
    }
    const github = rows.find((cells) => cells[1] === '`github`')!;
    expect(github[2]).toMatch(/none/);
    expect(github[4]).toContain('hookgate replay');
  });

  it('no runbook says that nothing is lost because providers retry', () => {
    expect(runbooks).not.toMatch(/nothing is lost: providers retry/i);
    expect(section('HookgateDatabaseUnavailable')).toMatch(/GitHub never retries/);
    expect(section('HookgateDatabaseUnavailable')).toContain('hookgate replay');
  });
});
