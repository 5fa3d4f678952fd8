import { execFileSync, spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { readReleases } from '../../release/releases.ts';
import { compareVersions } from '../../services/core/version.ts';
import { ROOT } from './process.ts';

/**
 * The release this tree upgrades from: the newest one release/releases records whose commit is
 * an ancestor of HEAD other than HEAD itself (a clone without tags still has the file and the
 * commits). Before any release exists, HEAD's own commit: the upgrade is then from the committed
 * tree to the working tree, which proves the harness and a rolling restart, not compatibility
 * with an older schema.
 */
export interface PreviousRelease {
  /** The release's version, or null when no release precedes this tree. */
  readonly version: string | null;
  readonly commit: string;
  /** What the upgrade starts from, for the test's name and its output. */
  readonly label: string;
}

function git(args: readonly string[]): string {
  return execFileSync('git', args, { cwd: ROOT, encoding: 'utf8' }).trim();
}

export function previousRelease(): PreviousRelease {
  const head = git(['rev-parse', 'HEAD']);
  const candidates = readReleases(ROOT)
    .filter((release) => release.commit !== head)
    .sort((a, b) => compareVersions(b.version, a.version));
  for (const release of candidates) {
    if (spawnSync('git', ['cat-file', '-e', `${release.commit}^{commit}`], { cwd: ROOT }).status !== 0) {
      throw new Error(
        `release/releases names ${release.version} at ${release.commit}, which this clone lacks: fetch the history (git fetch --unshallow) to run the upgrade test`,
      );
    }
    if (spawnSync('git', ['merge-base', '--is-ancestor', release.commit, head], { cwd: ROOT }).status === 0)
      return {
        version: release.version,
        commit: release.commit,
        label: `v${release.version} (${release.commit.slice(0, 12)})`,
      };
  }
  return { version: null, commit: head, label: `HEAD ${head.slice(0, 12)} (no release precedes this tree)` };
}

export interface Checkout {
  readonly root: string;
  /** How its node_modules came: this checkout's, linked (same package-lock.json), or npm ci. */
  readonly modules: 'linked' | 'installed';
  remove(): void;
}

/**
 * The release's files at its commit, extracted with git archive into a temporary directory (no
 * worktree registered, nothing left in the repository if the test is killed), with this
 * checkout's node_modules linked when package-lock.json is the same, else installed with npm ci.
 */
export function checkOut(commit: string): Checkout {
  const root = mkdtempSync(join(tmpdir(), 'hookgate-previous-'));
  try {
    execFileSync('sh', ['-c', `git -C "$0" archive "$1" | tar -x -C "$2"`, ROOT, commit, root]);
    const same =
      readFileSync(join(root, 'package-lock.json'), 'utf8') ===
      readFileSync(join(ROOT, 'package-lock.json'), 'utf8');
    if (same) symlinkSync(join(ROOT, 'node_modules'), join(root, 'node_modules'));
    else
      execFileSync('npm', ['ci', '--no-audit', '--no-fund', '--loglevel=error'], {
        cwd: root,
        stdio: 'inherit',
      });
    return {
      root,
      modules: same ? 'linked' : 'installed',
      remove: () => rmSync(root, { recursive: true, force: true }),
    };
  } catch (error) {
    rmSync(root, { recursive: true, force: true });
    throw error;
  }
}
