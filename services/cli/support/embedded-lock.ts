import { closeSync, existsSync, mkdirSync, openSync, readFileSync, unlinkSync, writeSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { EMBEDDED_DIR } from '../../core/db/resolve.ts';
import { HookgateError } from '../../core/errors.ts';

/** Where the `serve` that owns the embedded database writes its pid. */
export const SERVE_PID_FILE = 'serve.pid';

/** Whether `pid` is a live process that looks like a hookgate `serve` (Linux: its command line). */
function liveServe(pid: number): boolean {
  if (!Number.isInteger(pid) || pid <= 0 || pid === process.pid) return false;
  try {
    process.kill(pid, 0);
  } catch (error) {
    // EPERM: alive, someone else's.
    if ((error as { code?: unknown }).code !== 'EPERM') return false;
  }
  const cmdline = `/proc/${pid}/cmdline`;
  if (!existsSync(cmdline)) return true;
  try {
    return readFileSync(cmdline, 'utf8').split('\u0000').includes('serve');
  } catch {
    return true;
  }
}

/**
 * One `serve` per embedded database. A second one in the same directory would use the first
 * one's PostgreSQL (it adopts a running server and never stops it), and when the first stops, so
 * does that PostgreSQL: the second then answers every delivery 503. So the second is refused at
 * start, naming the first. A pid file left by a killed serve (its process gone) is taken over.
 * Returns the release, also run on exit.
 */
export function claimEmbeddedServe(dir: string = EMBEDDED_DIR): () => void {
  const root = resolve(dir);
  mkdirSync(root, { recursive: true });
  const file = join(root, SERVE_PID_FILE);
  for (let tries = 0; tries < 3; tries += 1) {
    try {
      const fd = openSync(file, 'wx', 0o644);
      writeSync(fd, `${process.pid}\n`);
      closeSync(fd);
      let released = false;
      const release = () => {
        if (released) return;
        released = true;
        process.off('exit', release);
        try {
          if (Number(readFileSync(file, 'utf8').trim()) === process.pid) unlinkSync(file);
        } catch {
          // Already gone.
        }
      };
      process.on('exit', release);
      return release;
    } catch (error) {
      if ((error as { code?: unknown }).code !== 'EEXIST') throw error;
    }
    let owner = Number.NaN;
    try {
      owner = Number(readFileSync(file, 'utf8').trim());
    } catch {
      // Removed meanwhile: try again.
    }
    if (liveServe(owner)) {
      throw new HookgateError(
        'embedded_in_use',
        `Another "hookgate serve" (pid ${owner}) is running on the embedded PostgreSQL under ${root}: a second one would share its database and answer 503 once the first stops. Stop it first, or run this one with DATABASE_URL set (one-shot commands such as stats may share it).`,
      );
    }
    try {
      unlinkSync(file);
    } catch {
      // Another starter took it over first; the next try finds its pid.
    }
  }
  throw new HookgateError('embedded_in_use', `Could not take ${file}; is another "hookgate serve" starting?`);
}
