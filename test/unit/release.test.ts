// `make release VERSION=x.y.z` (release/release.ts) in a repository of its own: it refuses a
// dirty tree, a version that disagrees, a missing CHANGELOG entry and a tag that exists; otherwise
// it makes the annotated tag vX.Y.Z on HEAD and records that commit in release/releases.
import { execFileSync, spawnSync } from 'node:child_process';
import { cpSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { readReleases } from '../../release/releases.ts';
import { readMigrations } from '../../services/core/db/migration-files.ts';
import { ROOT } from '../support/process.ts';

let repo: string;
const git = (...args: string[]) => execFileSync('git', args, { cwd: repo, encoding: 'utf8' }).trim();

/** The files the release reads, at version 0.2.0, committed. */
beforeEach(() => {
  repo = mkdtempSync(join(tmpdir(), 'hookgate-release-'));
  mkdirSync(join(repo, 'charts/hookgate'), { recursive: true });
  mkdirSync(join(repo, 'docs'));
  mkdirSync(join(repo, 'release'));
  cpSync(join(ROOT, 'migrations'), join(repo, 'migrations'), { recursive: true });
  writeFileSync(join(repo, 'package.json'), JSON.stringify({ name: 'hookgate', version: '0.2.0' }));
  writeFileSync(
    join(repo, 'charts/hookgate/Chart.yaml'),
    'name: hookgate\nversion: 0.2.0\nappVersion: "0.2.0"\n',
  );
  writeFileSync(join(repo, 'charts/hookgate/values.yaml'), 'image:\n  repository: hookgate\n  tag: ""\n');
  writeFileSync(join(repo, 'README.md'), 'docker build -t r/hookgate:0.2.0 .\n');
  writeFileSync(join(repo, 'docs/releases.md'), '# Releases\n');
  writeFileSync(
    join(repo, 'CHANGELOG.md'),
    '# Changelog\n\n## [0.2.0] - 2027-01-15\n\n- more\n\n## [0.1.0] - 2026-12-04\n',
  );
  // The file's header only: this repository has released nothing yet (the project's own lines
  // name commits this repository lacks).
  writeFileSync(
    join(repo, 'release/releases'),
    readFileSync(join(ROOT, 'release/releases'), 'utf8')
      .split('\n')
      .filter((line) => line.startsWith('#'))
      .map((line) => `${line}\n`)
      .join(''),
  );
  git('init', '--quiet', '--initial-branch=main');
  git('config', 'user.email', 'release@test.invalid');
  git('config', 'user.name', 'release test');
  git('add', '-A');
  git('commit', '--quiet', '-m', 'prepare 0.2.0');
});

afterEach(() => {
  rmSync(repo, { recursive: true, force: true });
});

function makeRelease(version: string): { code: number | null; output: string } {
  const run = spawnSync(process.execPath, [join(ROOT, 'release/release.ts'), version], {
    cwd: repo,
    encoding: 'utf8',
  });
  return { code: run.status, output: `${run.stdout}${run.stderr}` };
}

describe('make release', () => {
  it('tags HEAD vX.Y.Z (annotated) and records the commit in release/releases', () => {
    const head = git('rev-parse', 'HEAD');
    const run = makeRelease('0.2.0');
    expect(run.code, run.output).toBe(0);
    expect(run.output).toContain(`Tagged ${head} as v0.2.0`);
    expect(git('cat-file', '-t', 'v0.2.0')).toBe('tag');
    expect(git('rev-parse', 'v0.2.0^{commit}')).toBe(head);
    const newest = Math.max(...readMigrations().map((migration) => migration.version));
    expect(readReleases(repo)).toEqual([
      { version: '0.2.0', commit: head, date: '2027-01-15', lastMigration: newest },
    ]);
    // The record is committed on top of the tag: the tree is clean again.
    expect(git('status', '--porcelain')).toBe('');
    expect(git('rev-parse', 'HEAD~1')).toBe(head);
    // Once is enough.
    const again = makeRelease('0.2.0');
    expect(again.code).toBe(1);
    expect(again.output).toContain('the tag v0.2.0 exists already');
  });

  it('refuses a dirty tree, a version that disagrees and a missing CHANGELOG entry, and tags nothing', () => {
    writeFileSync(join(repo, 'notes.txt'), 'uncommitted\n');
    const dirty = makeRelease('0.2.0');
    expect(dirty.code).toBe(1);
    expect(dirty.output).toMatch(/Not releasing 0\.2\.0:\n- the working tree is not clean[\s\S]*notes\.txt/);
    rmSync(join(repo, 'notes.txt'));

    const other = makeRelease('0.3.0');
    expect(other.code).toBe(1);
    expect(other.output).toContain('package.json says 0.2.0, not 0.3.0');
    expect(other.output).toContain("charts/hookgate/Chart.yaml's appVersion is 0.2.0, not 0.3.0");
    expect(other.output).toContain('README.md names the image hookgate:0.2.0, not 0.3.0');
    expect(other.output).toContain('CHANGELOG.md has no "## [0.3.0] - YYYY-MM-DD" entry');

    writeFileSync(join(repo, 'CHANGELOG.md'), '# Changelog\n\n## [Unreleased]\n');
    git('commit', '--quiet', '-am', 'no entry');
    const unlisted = makeRelease('0.2.0');
    expect(unlisted.code).toBe(1);
    expect(unlisted.output).toContain('CHANGELOG.md has no "## [0.2.0] - YYYY-MM-DD" entry');

    // After a release (0.1.0, recorded), a migration that breaks the compatibility rule.
    writeFileSync(join(repo, 'CHANGELOG.md'), '# Changelog\n\n## [0.2.0] - 2027-01-15\n');
    writeFileSync(
      join(repo, 'release/releases'),
      `${readFileSync(join(repo, 'release/releases'), 'utf8')}0.1.0 ${'a'.repeat(40)} 2026-12-04 0027\n`,
    );
    writeFileSync(
      join(repo, 'migrations/0099_drop.sql'),
      'ALTER TABLE hookgate.inbox DROP COLUMN traceparent;\n',
    );
    git('add', '-A');
    git('commit', '--quiet', '-m', 'a contract step without its header');
    expect(makeRelease('0.2.0').output).toMatch(
      /0099_drop removes or narrows what the previous release may use/,
    );

    expect(makeRelease('v0.2').output).toContain('is not of the form MAJOR.MINOR.PATCH');
    expect(git('tag', '--list')).toBe('');
    expect(readReleases(repo).map((release) => release.version)).toEqual(['0.1.0']);
  });
});
