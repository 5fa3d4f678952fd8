import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

/**
 * release/releases: one line per release `make release` tagged, `VERSION COMMIT DATE MIGRATION`,
 * appended (and committed) right after the tag. The commit is what a clone without tags still
 * knows: the upgrade test starts the previous release from it. MIGRATION is the number of the
 * release's newest migration: a contract step must come after the release it names.
 */
export const RELEASES_FILE = 'release/releases';

export interface Release {
  readonly version: string;
  readonly commit: string;
  readonly date: string;
  /** The newest migration the release has (its number). */
  readonly lastMigration: number;
}

export function readReleases(root: string): Release[] {
  const path = join(root, RELEASES_FILE);
  if (!existsSync(path)) return [];
  return readFileSync(path, 'utf8')
    .split('\n')
    .map((line) => line.trim())
    .filter((line) => line.length > 0 && !line.startsWith('#'))
    .map((line) => {
      const [version, commit, date, migration] = line.split(/\s+/);
      if (!version || !commit || !/^[0-9a-f]{40}$/.test(commit) || !date || !/^\d{4}$/.test(migration ?? ''))
        throw new Error(`${RELEASES_FILE}: "${line}" is not "VERSION COMMIT DATE MIGRATION"`);
      return { version, commit, date, lastMigration: Number(migration) };
    });
}
