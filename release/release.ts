// `make release VERSION=x.y.z` (docs/releases.md): refuses unless the tree is clean, every version
// agrees with VERSION, CHANGELOG.md has its entry and the migrations keep the compatibility rule;
// then tags HEAD `vX.Y.Z` (annotated) and records the release's commit and newest migration in
// release/releases, committed on top of the tag.
import { execFileSync } from 'node:child_process';
import { appendFileSync } from 'node:fs';
import { join } from 'node:path';
import { readMigrations } from '../services/core/db/migration-files.ts';
import { migrationProblems } from './migration-rules.ts';
import { RELEASES_FILE, readReleases } from './releases.ts';
import { changelogEntry, SEMVER, versionProblems } from './versions.ts';

function git(root: string, args: readonly string[]): string {
  return execFileSync('git', args, { cwd: root, encoding: 'utf8' }).trim();
}

/** What stops a release of `version` from `root` now, as sentences (empty: it may go). */
export function releaseProblems(root: string, version: string): string[] {
  if (!SEMVER.test(version)) return [`VERSION=${version} is not of the form MAJOR.MINOR.PATCH (make release VERSION=0.1.0)`];
  const problems: string[] = [];
  const dirty = git(root, ['status', '--porcelain']);
  if (dirty) problems.push(`the working tree is not clean (commit or remove first):\n${dirty}`);
  problems.push(...versionProblems(root, version));
  problems.push(...migrationProblems(readMigrations(join(root, 'migrations')), readReleases(root)));
  if (git(root, ['tag', '--list', `v${version}`])) problems.push(`the tag v${version} exists already`);
  if (readReleases(root).some((release) => release.version === version))
    problems.push(`${RELEASES_FILE} lists ${version} already`);
  return problems;
}

/** Tags HEAD as the release and records it; returns the tagged commit. */
export function release(root: string, version: string): string {
  const problems = releaseProblems(root, version);
  if (problems.length > 0) throw new Error(`Not releasing ${version}:\n- ${problems.join('\n- ')}`);
  const commit = git(root, ['rev-parse', 'HEAD']);
  const date = changelogEntry(root, version)!.date;
  const last = Math.max(...readMigrations(join(root, 'migrations')).map((m) => m.version));
  git(root, ['tag', '-a', `v${version}`, '-m', `hookgate ${version}`, commit]);
  appendFileSync(join(root, RELEASES_FILE), `${version} ${commit} ${date} ${String(last).padStart(4, '0')}\n`);
  git(root, ['commit', '--quiet', '-m', `Release ${version} recorded (tag v${version})`, '--', RELEASES_FILE]);
  return commit;
}

if (import.meta.main) {
  const version = process.argv[2] ?? '';
  try {
    const commit = release(process.cwd(), version);
    process.stdout.write(
      `Tagged ${commit} as v${version} and recorded it in ${RELEASES_FILE}.\nPublish with: git push origin HEAD v${version}\n`,
    );
  } catch (error) {
    process.stderr.write(`${(error as Error).message}\n`);
    process.exitCode = 1;
  }
}
