import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { AUDITED_COMMANDS } from '../../services/core/audit/audit.ts';
import { runCliInProcess } from '../support/cli.ts';
import { ROOT } from '../support/process.ts';

describe('hookgate audit --help', () => {
  it('names every command the audit trail records', async () => {
    const run = await runCliInProcess(['audit', '--help'], {});
    expect(run.code).toBe(0);
    const text = run.stdout.replace(/\s+/g, ' ');
    for (const command of AUDITED_COMMANDS) expect(text).toContain(`"${command}"`);
  });
});

describe('a reader that goes away', () => {
  it('ends the command quietly (exit 0, no stack trace), as `hookgate … | head` does', async () => {
    const child = spawn(process.execPath, [join(ROOT, 'services/cli/main.ts'), '--help'], {
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    // Closed before the process has written anything: its first write meets a closed pipe.
    child.stdout.destroy();
    let stderr = '';
    child.stderr.on('data', (chunk: Buffer) => {
      stderr += chunk.toString();
    });
    const code = await new Promise<number | null>((resolve) => child.on('close', resolve));
    expect(stderr).not.toContain('EPIPE');
    expect(code).toBe(0);
  });
});
