import { readFileSync } from 'node:fs';
import { join } from 'node:path';

/**
 * The URL of the embedded PostgreSQL a `hookgate serve` started under `<dir>/.hookgate/` (its
 * port from the server's postmaster.pid, its password from the file hookgate keeps beside it), so
 * a test can watch that server's sessions.
 */
export function embeddedUrl(dir: string): string {
  const root = join(dir, '.hookgate');
  const port = Number(readFileSync(join(root, 'pg', 'postmaster.pid'), 'utf8').split('\n')[3]);
  const password = readFileSync(join(root, 'pg-password'), 'utf8').trim();
  return `postgres://postgres:${encodeURIComponent(password)}@127.0.0.1:${port}/hookgate`;
}
