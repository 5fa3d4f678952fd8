import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

/**
 * hookgate's version: package.json's, the one place it is written (docs/releases.md). The image
 * copies package.json beside services/, so a process reads the version it was built from.
 */
export const HOOKGATE_VERSION = (
  JSON.parse(readFileSync(join(dirname(fileURLToPath(import.meta.url)), '../../package.json'), 'utf8')) as {
    version: string;
  }
).version;

/** Compares two `major.minor.patch` versions: negative when a is older than b, 0 when equal. */
export function compareVersions(a: string, b: string): number {
  const pa = a.split('.').map(Number);
  const pb = b.split('.').map(Number);
  for (let i = 0; i < 3; i += 1) {
    const d = (pa[i] ?? 0) - (pb[i] ?? 0);
    if (d !== 0) return d;
  }
  return 0;
}
